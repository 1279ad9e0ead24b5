//! A job record's `artifacts/`: where a `pull` without `dst` lands, and
//! where a pull with one leaves a hard link (or a bounded copy).

use std::os::unix::fs::MetadataExt;

use crate::common::{stderr, TestProject};
use crate::pd::Pd;

#[tokio::test]
async fn pulls_are_kept_in_the_records_artifacts() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "artifacts");
    std::fs::write(
        dir.path().join("job.yaml"),
        r"version: 1
name: art
sandboxes:
  box: {}
steps:
  make:
    run: mkdir -p /tmp/out/sub && echo a > /tmp/out/a.txt && echo b > /tmp/out/sub/b.txt && echo r > /tmp/report.txt
  keep-dir:
    needs: [make]
    pull: { src: /tmp/out/ }
  keep-file:
    needs: [make]
    pull: { src: /tmp/report.txt, dst: results/report.txt }
",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["validate", "job.yaml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let art = dir.path().join(".pocketdock/instances/art-0001/artifacts");
    let read =
        |p: &str| std::fs::read_to_string(art.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert_eq!(read("keep-dir@box/out/a.txt"), "a\n");
    assert_eq!(read("keep-dir@box/out/sub/b.txt"), "b\n");
    assert!(
        !dir.path().join("out").exists(),
        "no dst: nothing outside the record"
    );
    // With a dst: the file there, and the same file (a hard link) in the record.
    let there = dir.path().join("results/report.txt");
    assert_eq!(std::fs::read_to_string(&there).unwrap(), "r\n");
    let kept = art.join("keep-file@box/report.txt");
    assert_eq!(
        std::fs::metadata(&there).unwrap().ino(),
        std::fs::metadata(&kept).unwrap().ino(),
        "a hard link on the same filesystem"
    );
    // The record's artifact list names the files where they are.
    let toml = std::fs::read_to_string(
        dir.path()
            .join(".pocketdock/instances/art-0001/instance.toml"),
    )
    .unwrap();
    assert!(toml.contains("artifacts/keep-dir@box/out/a.txt"), "{toml}");
}
