//! The record directory fails under the job: full, or read-only (issue 15,
//! item 2). The store makes these loud; these tests hold it to the issue.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::{
    containers, finish, manifest, pd, project, scrub, show, spawn_apply, wait_for, Fault,
};

/// A mount on a directory (a small tmpfs, or the directory made
/// read-only), unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount a tmpfs on {}", dir.display());
        Tmpfs(dir.to_path_buf())
    }

    /// `dir` made read-only in place (a read-only bind mount over
    /// itself): files already open stay writable, as on a filesystem
    /// remounted read-only under a process; anything new fails with EROFS.
    fn read_only(dir: &Path) -> Tmpfs {
        for args in [
            vec!["--bind".to_string()],
            vec!["-o".to_string(), "remount,bind,ro".to_string()],
        ] {
            let ok = Command::new("mount")
                .args(&args)
                .arg(dir)
                .arg(dir)
                .status()
                .unwrap()
                .success();
            assert!(ok, "mount {args:?} {}", dir.display());
        }
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Nothing named like a temporary record file anywhere under `dir`.
fn no_temporary_files(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                !name.contains(".tmp"),
                "temporary file left: {}",
                p.display()
            );
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
}

fn jobs_not_running(fault: &Fault, dir: &Path) {
    let o = pd(dir, fault, &["list", "--jobs"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("running"),
        "list --jobs shows a job running: {}",
        show(&o)
    );
}

// Issue 15, item 2: with `.pocketdock/` on a 300 KiB tmpfs and a step
// printing 2.6 MB, apply said "job succeeded" and exited 0, instance.toml
// stayed `running` with a zero-byte instance.tmp.<pid> beside it, and the
// step log was cut short without a word.
#[tokio::test]
async fn the_record_directory_on_a_full_small_tmpfs() {
    for fault in crate::harness::engines() {
        let dir = project("full");
        let pdir = dir.path().join(".pocketdock");
        let _fs = Tmpfs::mount(&pdir, "300k");
        manifest(
            dir.path(),
            "version: 1\nname: full\nsandboxes:\n  box:\n    image: IMAGE\nsteps:\n  first:\n    run: echo written-before\n  big:\n    run: yes 0123456789012345678901234567890123456789 | head -c 2600000\n",
        );
        let o = finish(spawn_apply(dir.path(), &fault, &[]));
        let what = format!("{}: {}", fault.kind, show(&o));
        let code = o.status.code().unwrap_or(-1);
        assert!(code != 0 && code != 101, "{what}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("No space left on device"), "{what}");
        assert!(stderr.contains(".pocketdock/instances/full-0001"), "{what}");
        no_temporary_files(&pdir);
        let rdir = pdir.join("instances/full-0001");
        let first = std::fs::read_to_string(rdir.join("logs/first.log")).unwrap_or_default();
        assert!(first.contains("written-before"), "lost: {first:?}");
        jobs_not_running(&fault, dir.path());
        assert!(containers(&fault, dir.path()).await.is_empty(), "{what}");
        scrub(&fault, dir.path()).await;
    }
}

// Issue 15, item 2: the same when the record directory turns read-only
// under a running job.
#[tokio::test]
async fn the_record_directory_read_only() {
    for fault in crate::harness::engines() {
        let dir = project("readonly");
        let pdir = dir.path().join(".pocketdock");
        manifest(
            dir.path(),
            "version: 1\nname: ro\nsandboxes:\n  box:\n    image: IMAGE\nsteps:\n  first:\n    run: echo written-before\n  later:\n    run: sleep 3; echo written-after\n",
        );
        let child = spawn_apply(dir.path(), &fault, &[]);
        let rdir = pdir.join("instances/ro-0001");
        wait_for("the first step to end", Duration::from_mins(1), || {
            std::fs::read_to_string(rdir.join("history.jsonl"))
                .is_ok_and(|h| h.contains("\"step_finished\""))
        });
        let history_before = std::fs::read_to_string(rdir.join("history.jsonl")).unwrap();
        let ro = Tmpfs::read_only(&rdir);
        let o = finish(child);
        let what = format!("{}: {}", fault.kind, show(&o));
        let code = o.status.code().unwrap_or(-1);
        assert!(code != 0 && code != 101, "{what}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("Read-only file system"), "{what}");
        assert!(stderr.contains(".pocketdock/instances/ro-0001"), "{what}");
        // Nothing written before is lost, and every line still parses.
        let history = std::fs::read_to_string(rdir.join("history.jsonl")).unwrap();
        assert!(history.starts_with(&history_before), "{what}");
        for l in history.lines() {
            serde_json::from_str::<serde_json::Value>(l).unwrap();
        }
        toml::from_str::<toml::Value>(
            &std::fs::read_to_string(rdir.join("instance.toml")).unwrap(),
        )
        .unwrap();
        drop(ro);
        no_temporary_files(&pdir);
        jobs_not_running(&fault, dir.path());
        // `doctor --fix` closes instance.toml as the runner's history says,
        // so the two agree, step by step.
        let o = pd(dir.path(), &fault, &["doctor", "--fix"]);
        assert!(o.status.success(), "{}", show(&o));
        let record: toml::Value =
            toml::from_str(&std::fs::read_to_string(rdir.join("instance.toml")).unwrap()).unwrap();
        let history: Vec<serde_json::Value> = std::fs::read_to_string(rdir.join("history.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let finished: Vec<&serde_json::Value> = history
            .iter()
            .filter(|e| e["event"] == "job_finished")
            .collect();
        assert_eq!(finished.len(), 1, "{what}: {history:?}");
        assert_eq!(
            record["status"].as_str(),
            finished[0]["status"].as_str(),
            "{what}"
        );
        for step in record["steps"].as_array().unwrap() {
            let last = history
                .iter()
                .rfind(|e| {
                    e["event"] == "step_finished" && e["step"].as_str() == step["id"].as_str()
                })
                .unwrap_or_else(|| panic!("{what}: no step_finished for {step}"));
            assert_eq!(step["status"].as_str(), last["status"].as_str(), "{what}");
        }
        assert!(containers(&fault, dir.path()).await.is_empty(), "{what}");
        scrub(&fault, dir.path()).await;
    }
}
