//! The user journey on the host: build, apply, run, the kernel, a session,
//! files in and out, a pool, `serve`, `doctor`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use crate::harness::{minimal, secs, show, Project};

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn build_minimal_from_the_faithful_base() {
    let p = Project::new("build");
    minimal(&p);
    // The faithful base has no python3: the profile installed it.
    let name = p.create(&["--profile", "minimal"]);
    let out = p.ok(&["run", &name, "python3 -c 'print(6*7)'; id -un"]);
    assert_eq!(out, "42\nsandbox\n");
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn apply_hello() {
    let p = Project::example("hello");
    minimal(&p);
    p.ok(&["apply", "job.yaml", "--var", "greeting=Bonjour"]);
    let got = std::fs::read_to_string(p.path().join("out/greeting.txt")).unwrap();
    assert!(got.contains("Bonjour"), "{got}");
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn apply_grading_with_recycling() {
    let p = Project::example("grading");
    minimal(&p);
    // The recipe's time limit is the one fixed wait: stretched under emulation.
    let job = std::fs::read_to_string(p.path().join("job.yaml")).unwrap();
    let job = job.replace("timeout: 10 }", &format!("timeout: {} }}", secs(10)));
    std::fs::write(p.path().join("job.yaml"), job).unwrap();
    // Two graders at a time: the third student's waits for a release, so
    // a container is reset for it. Uncapped, all four may be created
    // before any is released, and then none is recycled.
    let o = p.output(&[
        "apply",
        "job.yaml",
        "--output",
        "plain",
        "--max-sandboxes",
        "2",
    ]);
    assert!(o.status.success(), "{}", show(&o));
    let result =
        |s: &str| std::fs::read_to_string(p.path().join(format!("results/{s}.txt"))).unwrap();
    assert_eq!(result("alice"), "alice passed (0 of 5 failed)\n");
    assert_eq!(result("carol"), "carol failed (2 of 5 failed)\n");
    assert_eq!(result("dave"), "dave timed_out\n");
    // The graders recycled: a container reset for a later student.
    let record = find_file(&p.path().join(".pocketdock"), "instance.toml").expect("a job record");
    let rec = std::fs::read_to_string(record).unwrap();
    // A reset that failed is a warning in the output: shown with the record.
    assert!(rec.contains("\"recycled\""), "{rec}\n{}", show(&o));
}

/// The first file named `name` below `dir`.
fn find_file(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        let path = e.path();
        if path.is_dir() {
            if let Some(f) = find_file(&path, name) {
                return Some(f);
            }
        } else if e.file_name() == name {
            return Some(path);
        }
    }
    None
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn run_python_the_kernel_and_a_session() {
    let p = Project::new("kernel");
    minimal(&p);
    let name = p.create(&["--profile", "minimal"]);
    let t = secs(30);
    let out = p.ok(&[
        "run",
        "--timeout",
        &t,
        "--lang",
        "python",
        &name,
        "import sys; print(sys.version_info[0])",
    ]);
    assert_eq!(out.trim(), "3");
    // The kernel keeps its state between calls.
    p.ok(&["python", "--timeout", &t, &name, "x = 41"]);
    let out = p.ok(&["python", "--timeout", &t, &name, "print(x + 1)"]);
    assert_eq!(out.trim(), "42");
    // A session: a shell fed on stdin keeps its variables, exits with its status.
    let mut child = p
        .command(&["shell", &name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"y=41\necho session-$((y + 1))\nexit 3\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("session-42"),
        "{}",
        show(&o)
    );
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn push_and_pull_including_the_tmpfs_tmp() {
    let p = Project::new("files");
    minimal(&p);
    let name = p.create(&["--profile", "minimal"]);
    std::fs::create_dir_all(p.path().join("in/sub")).unwrap();
    std::fs::write(p.path().join("in/a.txt"), "alpha\n").unwrap();
    std::fs::write(p.path().join("in/sub/b.bin"), vec![7u8; 300_000]).unwrap();
    for dst in ["/home/sandbox/in", "/tmp/in"] {
        p.ok(&["push", &name, "in", dst]);
        let out = p.ok(&[
            "run",
            &name,
            &format!("cat {dst}/a.txt; wc -c < {dst}/sub/b.bin"),
        ]);
        assert_eq!(out, "alpha\n300000\n", "{dst}");
        let back = format!("back{}", dst.replace('/', "-"));
        p.ok(&["pull", &name, dst, &back]);
        let b = std::fs::read(p.path().join(&back).join("sub/b.bin")).unwrap();
        assert_eq!(b.len(), 300_000, "{dst}");
    }
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn pool_start_claim_and_stop() {
    let p = Project::new("pool");
    minimal(&p);
    p.ok(&["pool", "start", "--profile", "minimal", "--size", "1"]);
    let status: serde_json::Value =
        serde_json::from_str(&p.ok(&["pool", "status", "--json"])).unwrap();
    assert_eq!(status[0]["warm"], 1, "{status}");
    let claimed: serde_json::Value =
        serde_json::from_str(&p.ok(&["create", "--name", "claimer", "--json"])).unwrap();
    assert_eq!(claimed["name"], "claimer", "{claimed}");
    assert_eq!(p.ok(&["run", "claimer", "echo claimed"]), "claimed\n");
    p.ok(&["shutdown", "-y", "claimer"]);
    p.ok(&["pool", "stop", "-y"]);
    let status: serde_json::Value =
        serde_json::from_str(&p.ok(&["pool", "status", "--json"])).unwrap();
    assert!(
        status
            .as_array()
            .is_none_or(|a| a.iter().all(|s| s["warm"] == 0)),
        "{status}"
    );
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn serve_answers_an_api_call() {
    let p = Project::new("serve");
    let name = p.create(&["--image", crate::harness::BUSYBOX]);
    let mut child = p
        .command(&["serve", "--listen", "127.0.0.1:0", "--drain-timeout", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let addr = loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            panic!("serve did not start:\n{seen}");
        };
        seen.push_str(&line);
        seen.push('\n');
        if let Some(at) = line.find("http://") {
            break line[at + 7..].split('/').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    let body = http_get(&addr, "/v1/sandboxes");
    let _ = child.kill();
    let _ = child.wait();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains(&name), "{body}");
}

/// One GET over a plain TCP stream (the host suite needs no HTTP client).
fn http_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(crate::harness::scaled(
        std::time::Duration::from_secs(30),
    )))
    .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
#[ignore = "host suite: scripts/vm.sh suite"]
fn doctor_finds_nothing_wrong() {
    let p = Project::new("doctor");
    let name = p.create(&["--image", crate::harness::BUSYBOX]);
    let o = p.output(&["doctor"]);
    assert!(o.status.success(), "{}", show(&o));
    p.ok(&["shutdown", "-y", &name]);
    let o = p.output(&["doctor", "--json"]);
    assert!(o.status.success(), "{}", show(&o));
}
