//! A `/tmp` filler: `/tmp` is a 128 MiB tmpfs, so the write stops there,
//! in memory the sandbox's limit counts, never on the engine's disk.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn a_tmp_filler_stops_at_the_tmpfs_size() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "tmp_filler",
            sandbox: "",
            steps: "  fill:\n    run: ': TOKEN; dd if=/dev/zero of=/tmp/fill bs=1M count=3072'\n    timeout: 120s\n    allow_failure: true\n  \
                    size:\n    run: 'stat -f -c %T /tmp; stat -c %s /tmp/fill'\n",
        },
    )
    .await;
    assert_eq!(seen.status("fill@box"), "failed_allowed");
    seen.assert_contained("fill@box", "", Duration::from_mins(2))
        .await;
    let out = seen.output("size@box");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("tmpfs"), "{out}");
    let size: u64 = lines.next().unwrap_or_default().trim().parse().unwrap();
    // Out of space on the 128 MiB tmpfs: dd says so and exits 1.
    assert_eq!(seen.exit_code("fill@box"), Some(1), "{out}");
    assert!(size <= 128 << 20, "{out}");
}
