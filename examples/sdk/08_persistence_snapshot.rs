//! Persistence and snapshots: a sandbox kept across shutdowns, with its
//! record in a project, then saved as an image a new sandbox starts from.

use pocketdock::project::Project;
use pocketdock::store::PersistentSandbox;
use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Engine::connect().await?;
    let dir = std::env::temp_dir().join("pocketdock-example-project");
    std::fs::create_dir_all(&dir)?;
    let project = Project::find(&dir);
    let id = std::process::id();
    let mut spec = SandboxSpec::default();
    spec.name = Some(format!("example-kept-{id}"));
    spec.project = Some(project.name.clone());
    spec.persist = true;
    let kept = PersistentSandbox::create(&engine, &spec, &project).await?;
    println!("record: {}", kept.dir().display());
    let sb = kept.sandbox();
    sb.run(
        "echo remembered > /home/sandbox/notes",
        &RunOptions::default(),
    )
    .await?;

    // Shut down: stopped, not removed; resume finds the file again.
    kept.shutdown(pocketdock::ShutdownOptions::default())
        .await?;
    sb.resume().await?;
    let r = sb
        .run("cat /home/sandbox/notes", &RunOptions::default())
        .await?;
    print!("after resume: {}", r.stdout);

    // A snapshot is an image: new sandboxes start with the same files.
    let image = format!("pocketdock-example-notes:{id}");
    sb.snapshot(&image).await?;
    let from_image = SandboxSpec::for_image(&image);
    let r = Sandbox::with(&engine, &from_image, |copy| async move {
        copy.run("cat /home/sandbox/notes", &RunOptions::default())
            .await
    })
    .await?;
    print!("from the snapshot: {}", r.stdout);
    assert_eq!(r.stdout, "remembered\n");

    kept.shutdown(pocketdock::ShutdownOptions::DISCARD).await?; // removed for good, record too
    engine.remove_image(&image, true).await?;
    Ok(())
}
