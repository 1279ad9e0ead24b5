//! `recycle: true`: consecutive matrix instances share one container, and
//! nothing one instance leaves (a file in home, `/tmp` or `/dev/shm`, a
//! daemonized process, a listening socket, an environment variable) is
//! seen by the next.
//!
//! Each instance checks that it starts clean (`before`), plants every kind
//! of leftover (`plant`), and checks that they outlive the step
//! (`planted`), so that their absence in the next instance is the reset's
//! doing, not the step's end. One job at a time: each instance after the
//! first gets the container the one before it used.

use crate::common::{stderr, stdout, TestProject};
use crate::pd::Pd;

const INSTANCES: usize = 3;

/// Fails (naming what) when anything planted is there. (`42[4]2`: the
/// pattern must not match the check's own command line.)
const BEFORE: &str = r#"
set -u
echo "container=$(hostname)"
bad=
[ "$(ls -A ~ | tr '\n' ' ')" = ".bash_logout .bashrc .profile " ] || bad="$bad home:$(ls -A ~ | tr '\n' ' ')"
[ -z "$(ls -A /tmp)" ] || bad="$bad tmp:$(ls -A /tmp | tr '\n' ' ')"
[ -z "$(ls -A /dev/shm)" ] || bad="$bad shm:$(ls -A /dev/shm | tr '\n' ' ')"
[ -z "${PLANTED:-}" ] || bad="$bad env"
for p in /proc/[0-9]*; do
  if tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q 'sleep 42[4]2\|planted-listene[r]'; then bad="$bad process:$(tr '\0' ' ' < $p/cmdline)"; fi
  if tr '\0' '\n' < $p/environ 2>/dev/null | grep -q '^PLANTED='; then bad="$bad environ:${p#/proc/}"; fi
done
if awk 'NR > 1 && $4 == "0A"' /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q .; then bad="$bad listening"; fi
if [ -n "$bad" ]; then echo "LEFT OVER:$bad"; exit 1; fi
echo clean
"#;

/// Every kind of leftover; the daemons drop the step's environment (its
/// marker), so only a reset can find them.
const PLANT: &str = r#"
export PLANTED=1
echo secret > ~/planted; mkdir -p ~/d/e; chmod 000 ~/d
echo secret > /tmp/planted; echo secret > /dev/shm/planted
env -i PLANTED=1 setsid nohup sleep 4242 > /dev/null 2>&1 &
env -i PLANTED=1 setsid python3 -c 'import socket, time, sys
sys.argv[0] = "planted-listener"
s = socket.socket(); s.bind(("127.0.0.1", 4243)); s.listen(); time.sleep(600)' planted-listener > /dev/null 2>&1 &
sleep 0.5
"#;

/// The leftovers outlived `plant`.
const PLANTED: &str = r#"
set -u
for f in ~/planted /tmp/planted /dev/shm/planted; do [ -f $f ] || { echo "missing $f"; exit 1; }; done
pgrep -f 'sleep 4242' > /dev/null || { echo "no daemon"; exit 1; }
awk 'NR > 1 && $4 == "0A"' /proc/net/tcp | grep -q . || { echo "no listener"; exit 1; }
echo planted
"#;

fn manifest() -> String {
    let block = |s: &str| {
        s.trim().lines().fold(String::new(), |mut out, l| {
            out.push_str("      ");
            out.push_str(l);
            out.push('\n');
            out
        })
    };
    format!(
        "version: 1\nname: recycle\nsandboxes:\n  box:\n    profile: minimal\n    recycle: true\n    matrix:\n      n: [{}]\nsteps:\n  before:\n    sandbox: box\n    run: |\n{}  plant:\n    sandbox: box\n    needs: [before]\n    run: |\n{}  planted:\n    sandbox: box\n    needs: [plant]\n    run: |\n{}",
        (1..=INSTANCES).map(|n| n.to_string()).collect::<Vec<_>>().join(", "),
        block(BEFORE),
        block(PLANT),
        block(PLANTED),
    )
}

#[tokio::test]
async fn a_recycled_container_shows_nothing_of_the_previous_instance() {
    isolated("auto").await;
}

/// The same through the engine's exec alone: the helper serves nothing, so the reset is
/// its shell fallback.
#[tokio::test]
async fn the_exec_fallback_resets_as_completely() {
    isolated("exec").await;
}

async fn isolated(via: &str) {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "recycle");
    std::fs::write(dir.path().join("job.yaml"), manifest()).unwrap();
    let o = Pd::at(dir.path())
        .env("POCKETDOCK_EXEC_VIA", via)
        .output(&["apply", "job.yaml", "--jobs", "1", "--output", "ndjson"]);
    let events: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let said = |step: &str| -> String {
        events
            .iter()
            .filter(|e| {
                e["event"] == "output" && e["step"].as_str().is_some_and(|s| s.starts_with(step))
            })
            .filter_map(|e| e["data"].as_str())
            .collect()
    };
    assert_eq!(
        o.status.code(),
        Some(0),
        "before: {}\nplanted: {}\n{}",
        said("before@"),
        said("planted@"),
        stderr(&o)
    );

    // One container served every instance: the same name in every
    // creation, the same hostname (its id) seen inside.
    let created: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "sandbox_created")
        .filter_map(|e| e["container"].as_str())
        .collect();
    assert_eq!(created.len(), INSTANCES, "{created:?}");
    assert!(created.iter().all(|c| *c == created[0]), "{created:?}");
    let hosts: Vec<String> = said("before@")
        .lines()
        .filter_map(|l| l.strip_prefix("container=").map(str::to_string))
        .collect();
    assert_eq!(hosts.len(), INSTANCES, "{hosts:?}");
    assert!(hosts.iter().all(|h| *h == hosts[0]), "{hosts:?}");
    let recycled = events
        .iter()
        .filter(|e| e["event"] == "sandbox_released" && e["recycled"] == true)
        .count();
    assert_eq!(recycled, INSTANCES - 1);
    assert_eq!(said("planted@").matches("planted").count(), INSTANCES);
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn recycle_refuses_a_writable_root_at_its_key() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "recycle-rw");
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nsandboxes:\n  box:\n    recycle: true\n    read_only: false\nsteps:\n  a:\n    run: 'true'\n",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["plan", "job.yaml"]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(
        err.contains("job.yaml:5:16") && err.contains("read_only: false"),
        "{err}"
    );
    dir.assert_no_leaks().await;
}
