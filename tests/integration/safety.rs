//! The library is safe by default: a sandbox nobody shut down is removed
//! (drop guard), `Sandbox::with` shuts down whatever happens, panics
//! included, and `keep` opts out.

use pocketdock::{Error, RunOptions, Sandbox};

use crate::common::{spec, Cleanup};

async fn exists(engine: &pocketdock::Engine, name: &str) -> bool {
    match engine.inspect_container(name, false).await {
        Ok(_) => true,
        Err(Error::Api { status: 404, .. }) => false,
        Err(e) => panic!("inspect {name}: {e}"),
    }
}

#[tokio::test]
async fn a_sandbox_dropped_without_shutdown_is_removed() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let s = spec("drop");
    let name = s.name.clone().unwrap();
    c.add(name.clone());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    let copy = sb.clone();
    assert!(sb.removed_on_drop());
    drop(sb);
    assert!(exists(&engine, &name).await, "a clone still holds it");
    // A background process does not keep the container on its own.
    let _p = copy
        .commands()
        .run_detached("sleep 300", &RunOptions::default(), 1024)
        .await
        .unwrap();
    drop(copy);
    assert!(!exists(&engine, &name).await, "the last drop removes it");
}

#[tokio::test]
async fn a_panic_inside_with_still_removes_the_sandbox() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let s = spec("with-panic");
    let name = s.name.clone().unwrap();
    c.add(name.clone());
    let (e, sp) = (engine.clone(), s.clone());
    let task = tokio::spawn(async move {
        Sandbox::with(&e, &sp, |sb| async move {
            sb.run("true", &RunOptions::default()).await?;
            panic!("the block fails half-way");
            #[allow(unreachable_code)]
            Ok::<(), Error>(())
        })
        .await
    });
    let joined = task.await;
    assert!(joined.unwrap_err().is_panic(), "the panic carries on");
    assert!(!exists(&engine, &name).await, "with() removed it first");
}

#[tokio::test]
async fn a_panic_without_with_is_cleaned_up_by_the_drop_guard() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let s = spec("guard-panic");
    let name = s.name.clone().unwrap();
    c.add(name.clone());
    let (e, sp) = (engine.clone(), s.clone());
    let task = tokio::spawn(async move {
        let sb = Sandbox::create(&e, &sp).await.unwrap();
        let r = sb.run("exit 3", &RunOptions::default()).await.unwrap();
        assert_eq!(r.exit_code, 0, "this assertion fails on purpose");
    });
    assert!(task.await.unwrap_err().is_panic());
    assert!(!exists(&engine, &name).await, "unwinding removed it");
}

#[tokio::test]
async fn with_returns_the_block_value_errors_pass_through_and_kept_sandboxes_stay() {
    let engine = engine_or_skip!();
    let mut c = Cleanup::new(&engine);
    let s = spec("with-ok");
    let name = s.name.clone().unwrap();
    c.add(name.clone());
    let out = Sandbox::with(&engine, &s, |sb| async move {
        sb.run("echo inside", &RunOptions::default()).await
    })
    .await
    .unwrap();
    assert_eq!(out.stdout, "inside\n");
    assert!(!exists(&engine, &name).await);

    // An error from the block is returned as is, after the shutdown.
    let s = spec("with-err");
    let failing = s.name.clone().unwrap();
    c.add(failing.clone());
    let err = Sandbox::with(&engine, &s, |_sb| async move {
        Err::<(), Box<dyn std::error::Error>>("the block said no".into())
    })
    .await;
    assert_eq!(err.unwrap_err().to_string(), "the block said no");
    assert!(!exists(&engine, &failing).await);

    // keep(): the container outlives every handle.
    let s = spec("kept");
    let kept = s.name.clone().unwrap();
    c.add(kept.clone());
    let sb = Sandbox::create(&engine, &s).await.unwrap();
    sb.keep();
    assert!(!sb.removed_on_drop());
    drop(sb);
    assert!(exists(&engine, &kept).await);
    // A handle by name never removes what it did not create.
    drop(Sandbox::attach(&engine, &kept));
    assert!(exists(&engine, &kept).await);
}
