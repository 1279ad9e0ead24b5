//! A `/tmp` filler. Today `/tmp` is the writable layer, held by `fsize`
//! alone; once it is a size-capped tmpfs the write stops at its size.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn a_tmp_filler_stops_at_the_file_size_limit_or_the_tmpfs_size() {
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
    let fs = lines.next().unwrap_or_default().to_string();
    let size: u64 = lines.next().unwrap_or_default().trim().parse().unwrap();
    if fs == "tmpfs" {
        // Out of space on the tmpfs: dd reports it and exits 1.
        assert_eq!(seen.exit_code("fill@box"), Some(1), "{out}");
        assert!(size < 1 << 30, "{out}");
    } else {
        assert_eq!(seen.exit_code("fill@box"), Some(153), "{out}");
        assert_eq!(size, 1 << 30, "{out}");
    }
}
