//! Files: push a directory in, write and read single files, list, and
//! pull results out. Paths that would escape the destination are refused.

use pocketdock::{Engine, RunOptions, Sandbox, SandboxSpec};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Engine::connect().await?;
    let host =
        std::env::temp_dir().join(format!("pocketdock-example-files-{}", std::process::id()));
    let input = host.join("in");
    std::fs::create_dir_all(&input)?;
    std::fs::write(input.join("numbers.txt"), "3\n1\n2\n")?;

    let out = host.join("out");
    Sandbox::with(&engine, &SandboxSpec::default(), |sb| async move {
        let pushed = sb.push(&input, "/home/sandbox/in").await?;
        println!("pushed {} files, {} bytes", pushed.files, pushed.bytes);

        sb.write_file(
            "/home/sandbox/in/script.sh",
            "sort -n in/numbers.txt > out/sorted.txt\n",
        )
        .await?;
        for entry in sb.files().list_files("/home/sandbox/in").await? {
            println!("  {} ({} bytes)", entry.name, entry.size);
        }
        let r = sb
            .run(
                "cd /home/sandbox && mkdir -p out && sh in/script.sh",
                &RunOptions::default(),
            )
            .await?;
        assert!(r.ok, "{}", r.stderr);

        let sorted = sb.read_file("/home/sandbox/out/sorted.txt").await?;
        print!("sorted:\n{}", String::from_utf8_lossy(&sorted));
        sb.pull("/home/sandbox/out", &out).await?;
        let back = std::fs::read_to_string(out.join("sorted.txt"))?;
        assert_eq!(back, "1\n2\n3\n");
        println!("pulled to {}", out.display());
        Ok::<_, Box<dyn std::error::Error>>(())
    })
    .await?;
    std::fs::remove_dir_all(&host)?;
    Ok(())
}
