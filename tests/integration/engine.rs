//! The engine client against a real engine: framing, errors, listing.

use crate::common::{sandbox, spec, Cleanup};
use pocketdock::engine::demux::StreamKind;
use pocketdock::engine::ExecSpec;
use pocketdock::Error;

#[tokio::test]
async fn ping_and_negotiated_version() {
    let engine = engine_or_skip!();
    assert!(engine.ping().await.unwrap());
    let info = engine.info();
    assert!(info.api_version.starts_with("1."), "{info:?}");
    let v = engine.version().await.unwrap();
    assert!(!v.api_version.is_empty());
}

#[tokio::test]
async fn exec_stream_keeps_order_and_separates_streams() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("demux")).await;
    // Interleaved writes of varied sizes, some far larger than a frame or a read.
    let script = "for i in 1 2 3; do echo o$i; echo e$i >&2; done; \
                  head -c 300000 /dev/zero | tr '\\0' x; printf '' >&2; echo; echo end";
    let spec = ExecSpec {
        cmd: vec!["sh".into(), "-c".into(), script.into()],
        ..ExecSpec::default()
    };
    let id = engine.exec_create(sb.name(), &spec).await.unwrap();
    let mut out = engine.exec_start(&id, false).await.unwrap();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    while out
        .next(&mut |k, d| match k {
            StreamKind::Stdout => stdout.extend_from_slice(d),
            _ => stderr.extend_from_slice(d),
        })
        .await
        .unwrap()
    {}
    let stdout = String::from_utf8(stdout).unwrap();
    assert!(stdout.starts_with("o1\no2\no3\n"), "{}", &stdout[..20]);
    assert!(stdout.ends_with("\nend\n"));
    assert_eq!(stdout.matches('x').count(), 300_000);
    assert_eq!(String::from_utf8(stderr).unwrap(), "e1\ne2\ne3\n");

    let inspect = loop {
        let i = engine.exec_inspect(&id).await.unwrap();
        if !i.running {
            break i;
        }
    };
    assert_eq!(inspect.exit_code, Some(0));
}

#[tokio::test]
async fn tty_exec_is_raw() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("tty")).await;
    let spec = ExecSpec {
        cmd: vec![
            "sh".into(),
            "-c".into(),
            "echo out; echo err >&2; tty -s && echo is-a-tty".into(),
        ],
        tty: true,
        ..ExecSpec::default()
    };
    let id = engine.exec_create(sb.name(), &spec).await.unwrap();
    let mut out = engine.exec_start(&id, true).await.unwrap();
    let mut all = Vec::new();
    while out
        .next(&mut |_, d| all.extend_from_slice(d))
        .await
        .unwrap()
    {}
    let text = String::from_utf8_lossy(&all).replace('\r', "");
    assert_eq!(text, "out\nerr\nis-a-tty\n");
}

#[tokio::test]
async fn errors_carry_the_engines_status_and_message() {
    let engine = engine_or_skip!();
    match engine
        .inspect_container("pdt-no-such-container", false)
        .await
    {
        Err(Error::Api {
            status,
            message,
            op,
        }) => {
            assert_eq!(status, 404);
            assert_eq!(op, "inspect container");
            assert!(
                message.to_lowercase().contains("no such container"),
                "{message}"
            );
        }
        other => panic!("expected a 404, got {other:?}"),
    }
    assert!(!engine
        .image_exists("pocketdock-test/nothing-here:0")
        .await
        .unwrap());
}

#[tokio::test]
async fn list_filters_by_label() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let mut s = spec("label");
    let tag = format!("{:08x}", fastrand::u32(..));
    s.labels.insert("pocketdock.test-tag".into(), tag.clone());
    let sb = sandbox(&engine, &mut c, &s).await;
    let found = engine
        .list_containers(false, &[format!("pocketdock.test-tag={tag}")])
        .await
        .unwrap();
    assert_eq!(
        found
            .iter()
            .map(pocketdock::engine::ContainerSummary::name)
            .collect::<Vec<_>>(),
        [sb.name()]
    );
    engine.stop_container(sb.name(), 1).await.unwrap();
    let running = engine
        .list_containers(false, &[format!("pocketdock.test-tag={tag}")])
        .await
        .unwrap();
    assert!(running.is_empty());
    let all = engine
        .list_containers(true, &[format!("pocketdock.test-tag={tag}")])
        .await
        .unwrap();
    assert_eq!(all.len(), 1);
}

#[tokio::test]
async fn stdin_reaches_the_process_over_the_hijacked_connection() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let sb = sandbox(&engine, &mut c, &spec("stdin")).await;
    let spec = ExecSpec {
        cmd: vec!["sh".into(), "-c".into(), "tr a-z A-Z; echo done >&2".into()],
        attach_stdin: true,
        ..ExecSpec::default()
    };
    let id = engine.exec_create(sb.name(), &spec).await.unwrap();
    let (mut out, mut input) = engine.exec_start_attached(&id, false).await.unwrap();
    input.write(b"hello ").await.unwrap();
    input.write(b"stdin\n").await.unwrap();
    input.close().await.unwrap();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let read = async {
        while out
            .next(&mut |k, d| match k {
                StreamKind::Stdout => stdout.extend_from_slice(d),
                _ => stderr.extend_from_slice(d),
            })
            .await
            .unwrap()
        {}
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .expect("the stream ended after stdin closed");
    assert_eq!(String::from_utf8_lossy(&stdout), "HELLO STDIN\n");
    assert_eq!(String::from_utf8_lossy(&stderr), "done\n");
}
