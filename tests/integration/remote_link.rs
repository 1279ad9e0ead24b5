//! The remote engines' link goes down mid-job (the veth pair to their
//! network namespace set down): the step's failure is reported within
//! 30 s (TCP keepalive over TCP+TLS, ssh's own keepalive over SSH), not
//! after the kernel's two hours, and nothing on the local engine is
//! touched.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{only_record, repo};
use crate::pd::Pd;

/// The link set down, set up again when dropped.
struct LinkDown;

impl LinkDown {
    fn set(state: &str) -> bool {
        Command::new("bash")
            .arg(repo().join("scripts/remote-engine.sh"))
            .args(["link", state])
            .status()
            .is_ok_and(|s| s.success())
    }

    fn take() -> Option<LinkDown> {
        Self::set("down").then_some(LinkDown)
    }
}

impl Drop for LinkDown {
    fn drop(&mut self) {
        Self::set("up");
    }
}

/// Apply a job whose step sleeps through `socket`, take the link down once
/// it has started, and check its failure line.
fn link_down_mid_job(podman: bool, over_ssh: bool) {
    let _alone = super::LINK
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(certs) = super::certs() else { return };
    let Some((socket, behind)) = super::endpoint(&certs, podman, over_ssh) else {
        return;
    };
    let pd = super::remote(&certs, "")
        .env("POCKETDOCK_SOCKET", &socket)
        .file(
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
        .any(|l| l.contains("[a@s] started"));
    assert!(started, "the step never started");
    let Some(down) = LinkDown::take() else {
        let _ = child.kill();
        let _ = child.wait();
        crate::common::skip("the link to the remote engines cannot be set down here");
        return;
    };
    let at = Instant::now();
    let failed = lines.map_while(Result::ok).find(|l| l.contains("✗ a@s"));
    let took = at.elapsed();
    drop(down);
    let _ = child.wait();
    // Its removal was not confirmed while the link was down; no other
    // test of the remote engines runs meanwhile, so whatever is there is its.
    let left = super::behind_at(behind, &["ps", "-aq"]);
    for id in left.lines() {
        super::behind_at(behind, &["rm", "-f", id]);
    }
    let failed = failed.expect("no failure line for the step");
    // Keepalive (about 20 s) and a request's own deadline (20 s for an
    // exec's start) race; either names the engine as the cause.
    assert!(
        failed.contains("the engine went away")
            || failed.contains("did not answer within")
            || failed.contains("lost the connection"),
        "{failed}"
    );
    assert!(
        took < Duration::from_secs(30),
        "reported after {took:?}: {failed}"
    );
    // The local engine never saw the job: none of its containers is here.
    let record = crate::common::instance_toml(&only_record(pd.path()));
    for sb in record["sandboxes"].as_array().into_iter().flatten() {
        let name = sb["container"].as_str().unwrap_or_default();
        let on_local = Pd::new().cmd(["list", "--all", "--json"]).code(0).stdout();
        assert!(!on_local.contains(name), "{name} is on the local engine");
    }
}

#[test]
fn a_link_down_mid_job_is_reported_within_30s_over_tcp_with_tls() {
    link_down_mid_job(false, false);
}

#[test]
fn a_link_down_mid_job_is_reported_within_30s_over_ssh_to_podman() {
    link_down_mid_job(true, true);
}
