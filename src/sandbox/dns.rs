//! The `dns-blocked` network: the bridge as usual, but the container's
//! resolver points at its own loopback, where nothing answers, with no
//! search domains. A lookup is refused at once (no timeout to wait out),
//! while an IP address on the bridge (another sandbox, the gateway) still
//! answers. Both engines write these settings into `/etc/resolv.conf` on
//! their default bridge and report them back in an inspect.

use crate::engine::{HostConfig, InspectHostConfig};

/// The name server a dns-blocked sandbox is given: `0.0.0.0` is the
/// container's own loopback to the resolver, where no server listens.
pub const BLOCKED_RESOLVER: &str = "0.0.0.0";

/// What users write: `network: dns-blocked`, `--network dns-blocked`.
pub const MODE_NAME: &str = "dns-blocked";

/// Point `host`'s resolver nowhere: no server, no search domains, and a
/// one-second, one-try resolver should a query ever be dropped rather
/// than refused.
pub fn block(host: &mut HostConfig) {
    host.dns = vec![BLOCKED_RESOLVER.to_string()];
    host.dns_search = vec![".".to_string()];
    host.dns_options = vec!["timeout:1".to_string(), "attempts:1".to_string()];
}

/// Whether an inspected container was created dns-blocked.
#[must_use]
pub fn is_blocked(host: &InspectHostConfig) -> bool {
    host.network_mode != "none" && host.dns.as_deref().is_some_and(|d| d == [BLOCKED_RESOLVER])
}

/// How a sandbox's network is shown: `off`, `on` or `dns-blocked`.
#[must_use]
pub fn mode_name(network: bool, dns_blocked: bool) -> &'static str {
    match (network, dns_blocked) {
        (false, _) => "off",
        (true, false) => "on",
        (true, true) => MODE_NAME,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_host_config_has_one_dead_resolver_and_no_search() {
        let mut h = HostConfig::default();
        block(&mut h);
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json["Dns"], serde_json::json!(["0.0.0.0"]));
        assert_eq!(json["DnsSearch"], serde_json::json!(["."]));
        assert_eq!(json["DnsOptions"][0], "timeout:1");
        // An ordinary create sends none of them.
        let plain = serde_json::to_value(HostConfig::default()).unwrap();
        assert!(plain.get("Dns").is_none() && plain.get("DnsSearch").is_none());
    }

    #[test]
    fn an_inspect_says_blocked_only_with_the_network_on() {
        let mut i = InspectHostConfig {
            network_mode: "bridge".into(),
            dns: Some(vec![BLOCKED_RESOLVER.into()]),
            ..InspectHostConfig::default()
        };
        assert!(is_blocked(&i));
        i.network_mode = "none".into();
        assert!(!is_blocked(&i));
        i.network_mode = "default".into();
        i.dns = None;
        assert!(!is_blocked(&i));
        assert_eq!(mode_name(true, true), "dns-blocked");
        assert_eq!(mode_name(false, true), "off");
    }
}
