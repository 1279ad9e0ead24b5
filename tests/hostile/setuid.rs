//! A setuid escalation attempt as the sandbox's user: `su`, `setuid(0)`,
//! a setuid copy of a shell and `mount` give no root, and the image has
//! no setuid or setgid file to try; had it one, no-new-privileges (on by
//! default) would keep it from giving anything.

use std::time::Duration;

use crate::harness::{apply, Attack};

const ATTEMPTS: &str = r#"  escalate:
    run: |
      : TOKEN
      su root -c 'echo ROOT' < /dev/null; echo "su=$?"
      python3 -c 'import os; os.setuid(0); print("ROOT")'; echo "setuid=$?"
      cp /bin/sh /tmp/sh && chmod u+s /tmp/sh && echo "copy=$(/tmp/sh -p -c 'id -u')"
      mkdir -p /tmp/m && mount -t tmpfs x /tmp/m; echo "mount=$?"
      echo "uid=$(id -u)"
      echo "nnp=$(awk '/^NoNewPrivs:/ {print $2}' /proc/self/status)"
      echo "setuid_files=$(find / -xdev -type f -perm /6000 2>/dev/null | wc -l)"
      [ "$(id -u)" != 0 ]
    timeout: 30s
"#;

#[tokio::test]
async fn a_setuid_escalation_attempt_gives_no_root() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "setuid",
            sandbox: "",
            steps: ATTEMPTS,
        },
    )
    .await;
    let out = seen.output("escalate@box");
    assert_eq!(seen.status("escalate@box"), "succeeded", "{out}");
    seen.assert_contained("escalate@box", "", Duration::from_secs(30))
        .await;
    assert!(!out.contains("ROOT"), "{out}");
    // The shipped images have no setuid or setgid file at all.
    for refused in [
        "su=1",
        "setuid=1",
        "copy=1000",
        "uid=1000",
        "nnp=1",
        "setuid_files=0",
    ] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    assert!(!out.contains("mount=0"), "{out}");
}
