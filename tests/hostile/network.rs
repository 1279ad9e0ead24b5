//! Reaching out: a connection to an IP with the network off, and a name
//! lookup with `network: dns-blocked`, both fail at once.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn a_connection_to_an_ip_fails_at_once_with_the_network_off() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "connect",
            sandbox: "",
            steps: "  connect:\n    run: {cmd: \"import socket  # TOKEN\\nsocket.create_connection(('1.1.1.1', 80), timeout=10)\", lang: python}\n    timeout: 30s\n",
        },
    )
    .await;
    assert_eq!(seen.status("connect@box"), "failed");
    seen.assert_contained("connect@box", "", Duration::from_secs(5))
        .await;
    let out = seen.output("connect@box");
    assert!(out.contains("Network is unreachable"), "{out}");
}

#[tokio::test]
async fn a_name_lookup_fails_at_once_with_dns_blocked() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "dns",
            sandbox: "network: dns-blocked",
            steps: "  lookup:\n    run: {cmd: \"import socket  # TOKEN\\nsocket.getaddrinfo('example.com', 80)\", lang: python}\n    timeout: 30s\n",
        },
    )
    .await;
    assert_eq!(seen.status("lookup@box"), "failed");
    seen.assert_contained("lookup@box", "", Duration::from_secs(5))
        .await;
    let out = seen.output("lookup@box");
    assert!(out.contains("gaierror"), "{out}");
}
