//! 100,000 open files: the `nofile` ulimit (4096) stops them.

use std::time::Duration;

use crate::harness::{apply, Attack};

#[tokio::test]
async fn opening_100000_files_stops_at_the_nofile_limit() {
    let engine = crate::engine_or_skip!();
    let seen = apply(
        &engine,
        &Attack {
            name: "open_files",
            sandbox: "",
            steps: "  open:\n    run:\n      lang: python\n      cmd: |\n        # TOKEN\n        fs = []\n        try:\n            for i in range(100000):\n                fs.append(open('/dev/null'))\n        except OSError as e:\n            print('stopped at', len(fs), e.errno)\n            raise SystemExit(3)\n    timeout: 30s\n",
        },
    )
    .await;
    assert_eq!(seen.status("open@box"), "failed");
    assert_eq!(seen.exit_code("open@box"), Some(3));
    seen.assert_contained("open@box", "", Duration::from_secs(30))
        .await;
    let out = seen.output("open@box");
    let opened: u32 = out
        .split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    // EMFILE (24) below 4096: three descriptors are stdin, stdout, stderr.
    assert!(opened < 4096 && opened > 4000, "{out}");
    assert!(out.trim_end().ends_with(" 24"), "{out}");
}
