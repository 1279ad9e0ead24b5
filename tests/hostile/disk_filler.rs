//! A disk filler in the writable layer: one file stops at the `fsize`
//! ulimit (1 GiB), so the engine's disk loses at most that much.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn a_disk_filler_stops_at_the_file_size_limit() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "disk_filler",
            sandbox: "",
            steps: "  fill:\n    run: ': TOKEN; dd if=/dev/zero of=$HOME/fill bs=1M count=3072'\n    timeout: 120s\n    allow_failure: true\n  \
                    size:\n    run: 'stat -c %s $HOME/fill'\n",
        },
    )
    .await;
    assert_eq!(seen.status("fill@box"), "failed_allowed");
    // 128 + SIGXFSZ (25): the kernel stopped the write at the limit.
    assert_eq!(seen.exit_code("fill@box"), Some(153));
    seen.assert_contained("fill@box", "", Duration::from_mins(2))
        .await;
    let size: u64 = seen.output("size@box").trim().parse().unwrap();
    assert_eq!(size, 1 << 30, "the file stopped at exactly 1 GiB");
}
