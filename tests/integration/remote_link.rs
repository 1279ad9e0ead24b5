//! The remote engine's link goes down mid-job (every packet to and from
//! its port dropped): the step's failure is reported within 30 s, through
//! TCP keepalive, not after the kernel's two hours.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The DROP rules for the port, removed when dropped.
struct LinkDown(String);

impl LinkDown {
    fn rules(port: &str) -> [[String; 8]; 2] {
        let rule =
            |dir: &str| ["INPUT", "-i", "lo", "-p", "tcp", dir, port, "-j"].map(str::to_string);
        [rule("--dport"), rule("--sport")]
    }

    fn iptables(op: &str, port: &str) -> bool {
        Self::rules(port).iter().all(|r| {
            Command::new("iptables")
                .arg(op)
                .args(r)
                .arg("DROP")
                .status()
                .is_ok_and(|s| s.success())
        })
    }

    fn take(port: &str) -> Option<LinkDown> {
        Self::iptables("-I", port).then(|| LinkDown(port.to_string()))
    }
}

impl Drop for LinkDown {
    fn drop(&mut self) {
        Self::iptables("-D", &self.0);
    }
}

#[test]
fn a_link_down_mid_job_is_reported_within_30s() {
    let _alone = super::LINK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(certs) = super::certs() else { return };
    let port = std::fs::read_to_string(certs.join("port")).unwrap();
    let pd = super::remote(&certs, "").file(
        "job.yaml",
        format!(
            "version: 1\nsandboxes:\n  s:\n    image: {}\nsteps:\n  a: {{run: \"echo started; sleep 120\"}}\n",
            super::IMAGE
        ),
    );
    let mut child = pd
        .command(["apply", "job.yaml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("started"));
    assert!(started, "the step never started");
    let Some(down) = LinkDown::take(port.trim()) else {
        let _ = child.kill();
        let _ = child.wait();
        crate::common::skip("iptables cannot drop the port here");
        return;
    };
    let at = Instant::now();
    let failed = lines.map_while(Result::ok).find(|l| l.contains("✗ a@s"));
    let took = at.elapsed();
    drop(down);
    let _ = child.wait();
    // Its removal was not confirmed while the link was down; no other
    // test of the remote engine runs meanwhile, so whatever is there is its.
    for id in super::behind(&["ps", "-aq"]).lines() {
        super::behind(&["rm", "-f", id]);
    }
    let failed = failed.expect("no failure line for the step");
    // TCP keepalive (about 20 s) and a request's own deadline (20 s for
    // an exec's start) race; either names the engine as the cause.
    assert!(
        failed.contains("the engine went away") || failed.contains("did not answer within"),
        "{failed}"
    );
    assert!(
        took < Duration::from_secs(30),
        "reported after {took:?}: {failed}"
    );
}
