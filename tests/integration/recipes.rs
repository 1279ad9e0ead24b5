//! Recipes end to end: the shipped firmware and grading recipes through
//! their examples, the esp32 offline failure, `recipe list|show`, and
//! `uses:` mistakes, against the engine POCKETDOCK_SOCKET names.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{copy_dir, instance_toml, repo, stderr, stdout, step_status, TestProject};
use crate::pd::Pd;

fn only_record(dir: &Path) -> std::path::PathBuf {
    let records: Vec<_> = std::fs::read_dir(dir.join(".pocketdock/instances"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    records[0].clone()
}

/// What `file` would say of the ELF at `path`: "ARM" for a 32-bit ARM
/// ELF (read from the header, so the test needs no `file` on the host).
fn file_says(path: &Path) -> String {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let elf = b.len() > 20 && b.starts_with(b"\x7fELF");
    match (elf, b.get(4), b.get(18..20)) {
        (true, Some(1), Some([40, 0])) => "ELF 32-bit, ARM".into(),
        (true, _, m) => format!("ELF, machine {m:?}"),
        _ => "not an ELF".into(),
    }
}

#[tokio::test]
async fn the_stm32_example_builds_emulates_and_asserts_each_variant() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "stm32");
    copy_dir(&repo().join("examples/stm32"), dir.path());
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "--output", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    for board in ["hello", "blinky"] {
        let elf = dir.path().join(format!("out/{board}/firmware.elf"));
        assert!(file_says(&elf).contains("ARM"), "{}", file_says(&elf));
        assert!(dir
            .path()
            .join(format!("out/{board}/firmware.bin"))
            .is_file());
        assert!(
            stdout(&o).contains(&format!(
                "[emulate.emulate@fw[board={board}]] hello from stm32 ({board})"
            )),
            "{}",
            stdout(&o)
        );
        assert!(
            stdout(&o).contains(&format!("uart: hello from stm32 ({board})")),
            "{}",
            stdout(&o)
        );
    }
    let rec = instance_toml(&only_record(dir.path()));
    assert_eq!(step_status(&rec, "fw.build@fw[board=blinky]"), "succeeded");
    assert_eq!(
        step_status(&rec, "emulate.emulate@fw[board=hello]"),
        "succeeded"
    );
    assert_eq!(rec["artifacts"].as_array().unwrap().len(), 4, "{rec}");

    // A firmware whose UART says something else fails the emulate step.
    std::fs::remove_dir_all(dir.path().join(".pocketdock/instances")).unwrap();
    let main = dir.path().join("boards/hello/main.c");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        text.replace("hello from stm32", "goodbye from stm32"),
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&[
        "apply",
        "job.yaml",
        "--output",
        "plain",
        "--var",
        "boards=[hello]",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let rec = instance_toml(&only_record(dir.path()));
    assert_eq!(
        step_status(&rec, "emulate.emulate@fw[board=hello]"),
        "failed"
    );
    assert!(
        stdout(&o).contains("goodbye from stm32 (hello)")
            && stdout(&o).contains("no output matched")
            && stdout(&o).contains("the last lines it printed:")
            && stdout(&o).contains("  | goodbye from stm32 (hello)"),
        "{}",
        stdout(&o)
    );

    // A firmware that prints the `fail_on` pattern and hangs fails at
    // once, not at the timeout, and shows what it printed last.
    std::fs::remove_dir_all(dir.path().join(".pocketdock/instances")).unwrap();
    let o = Pd::at(dir.path()).output(&[
        "apply",
        "job.yaml",
        "--output",
        "plain",
        "--var",
        "boards=[selftest]",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("printed /^PANIC/ on stm32vldiscovery: PANIC: self-test failed")
            && out.contains("  | self-test (selftest): running"),
        "{out}"
    );
    let rec = instance_toml(&only_record(dir.path()));
    let emulate = rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"].as_str() == Some("emulate.emulate@fw[board=selftest]"))
        .expect("the emulate step");
    assert_eq!(emulate["status"].as_str(), Some("failed"));
    eprintln!(
        "emulate of the failing self-test: {} ms",
        emulate["duration_ms"]
    );
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn the_stm32_recipe_builds_any_self_contained_makefile_project() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "stm32-own");
    let src = dir.path().join("boards/tiny");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("main.c"),
        "int main(void) { for (;;) {} }\nvoid _start(void) { main(); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("Makefile"),
        "build: app.elf\napp.elf: main.c\n\tarm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -nostdlib -e _start main.c -o app.elf\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        "version: 1\nsandboxes:\n  fw: {profile: embedded, build: auto, network: false, matrix: {board: [tiny]}}\nsteps:\n  fw:\n    uses: stm32\n    with: { src: \"boards/{{ matrix.board }}\", target: build, artifacts: [app.elf], out: \"out/{{ matrix.board }}\" }\n  show:\n    needs: fw\n    run: echo text={{ steps.fw.outputs.text }}\n",
    )
    .unwrap();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "--output", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(file_says(&dir.path().join("out/tiny/app.elf")).contains("ARM"));
    assert!(
        stdout(&o).contains("[show@fw[board=tiny]] text="),
        "{}",
        stdout(&o)
    );
    assert!(
        !stdout(&o).contains("[show@fw[board=tiny]] text=\n"),
        "{}",
        stdout(&o)
    );
}

#[tokio::test]
async fn the_arduino_example_yields_a_hex_with_no_network() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "arduino");
    copy_dir(&repo().join("examples/arduino"), dir.path());
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "--output", "plain"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let hex = std::fs::read_to_string(dir.path().join("out/blink.hex")).unwrap();
    assert!(
        hex.starts_with(':') && hex.trim_end().ends_with(":00000001FF"),
        "{hex}"
    );
    assert!(stdout(&o).contains("blink.hex: "), "{}", stdout(&o));
    let plan = Pd::new()
        .in_dir(dir.path())
        .cmd(["plan", "job.yaml", "--json"])
        .code(0)
        .json();
    assert_eq!(plan["sandboxes"][0]["spec"]["network"], false, "{plan}");
}

#[tokio::test]
async fn the_esp32_recipe_fails_fast_offline_with_the_priming_hint() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "esp32");
    copy_dir(&repo().join("examples/esp32"), dir.path());
    // Make sure the image is there first: its build is not what is timed.
    let o = Pd::at(dir.path()).output(&["build", "embedded"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let yaml = std::fs::read_to_string(dir.path().join("job.yaml")).unwrap();
    std::fs::write(
        dir.path().join("job.yaml"),
        yaml.replace("    build: auto\n", "    build: auto\n    network: false\n"),
    )
    .unwrap();
    let started = Instant::now();
    let o = Pd::at(dir.path()).output(&["apply", "job.yaml", "--output", "plain"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let out = stdout(&o);
    assert!(out.contains("registry is unreachable"), "{out}");
    assert!(out.contains("pocketdock export --profile esp32"), "{out}");
    let rec = instance_toml(&only_record(dir.path()));
    assert_eq!(step_status(&rec, "firmware.build@esp"), "failed");
    assert_eq!(step_status(&rec, "firmware.pull@esp"), "skipped");
    dir.assert_no_leaks().await;
}

#[tokio::test]
async fn the_grading_python_recipe_gives_verdicts_with_counts() {
    let engine = engine_or_skip!();
    let dir = TestProject::new(&engine, "grading-recipe");
    copy_dir(&repo().join("examples/grading"), dir.path());
    // The grading example is written on the recipe; `--var` narrows it.
    let o = Pd::at(dir.path()).output(&[
        "apply",
        "job.yaml",
        "--output",
        "plain",
        "--var",
        "students=[carol, dave]",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    for line in [
        "[show@summary] carol failed (2 of 5 failed)",
        "[show@summary] dave timed_out",
        "[grade.grade@grader[student=dave]] verdict: timed_out",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(!out.contains("alice"), "{out}");
    // The verdict carries what the test run used, measured in the sandbox.
    let carol = out
        .lines()
        .find(|l| l.contains("student=carol]] verdict: failed (cpu "))
        .unwrap_or_else(|| panic!("no measured verdict for carol: {out}"));
    let figures: Vec<u64> = carol
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let (cpu_ms, peak_kib) = (figures[figures.len() - 2], figures[figures.len() - 1]);
    assert!(cpu_ms > 0 && cpu_ms < 60_000, "{carol}");
    // A Python interpreter is more than 4 MiB and less than the sandbox's 256.
    assert!(peak_kib > 4096 && peak_kib < 256 * 1024, "{carol}");
}

#[test]
fn recipe_list_and_show_describe_the_shipped_recipes() {
    let pd = Pd::new().no_engine();
    let list = pd.cmd(["recipe", "list"]).code(0).stdout();
    for name in ["stm32", "qemu-arm", "arduino", "esp32", "grading-python"] {
        assert!(list.contains(name), "{list}");
    }
    pd.cmd(["recipe", "show", "stm32"])
        .code(0)
        .stdout_has("| `artifacts` | list | `[\"firmware.elf\",\"firmware.bin\"]` |");
    let j = pd
        .cmd(["recipe", "show", "qemu-arm", "--json"])
        .code(0)
        .json();
    assert_eq!(j["profile"], "embedded");
    assert_eq!(j["inputs"][2]["name"], "expect");
    assert_eq!(j["inputs"][2]["required"], true);
    pd.cmd(["recipe", "show", "stm33"])
        .code(2)
        .stderr_has("did you mean `stm32`?");
    let all = pd.cmd(["recipe", "list", "--json"]).code(0).json();
    assert_eq!(all.as_array().unwrap().len(), 5, "{all}");
}

#[test]
fn a_project_recipe_is_found_and_shadows_nothing_shipped() {
    let pd = Pd::new()
        .no_engine()
        .file(".pocketdock/recipes/hello/recipe.yaml", "version: 1\ndescription: Greet\ninputs:\n  who: {required: true}\nsteps:\n  hi:\n    run: echo hi {{ inputs.who }}\n")
        .file("job.yaml", "version: 1\nsandboxes: {s: {}}\nsteps:\n  g:\n    uses: hello\n    with: {who: me}\n");
    pd.cmd(["recipe", "list"])
        .code(0)
        .stdout_has("hello")
        .stdout_has("stm32");
    let plan = pd.cmd(["plan", "job.yaml", "--json"]).code(0).json();
    assert!(plan.to_string().contains("g.hi@s"), "{plan}");
    pd.cmd(["plan", "job.yaml", "--dot"])
        .code(0)
        .stdout_has("g.hi (run)");
}

#[test]
fn bad_with_values_exit_2_at_the_using_manifest() {
    Pd::new()
        .no_engine()
        .file(
            "job.yaml",
            "version: 1\nsandboxes:\n  fw: {profile: embedded}\nsteps:\n  fw:\n    uses: stm32\n    with: {src: b, out: o, artifact: [a.elf]}\n",
        )
        .args(["validate", "job.yaml"])
        .code(2)
        .stderr_has("job.yaml:7:28: error: step `fw`: recipe `stm32` has no input `artifact`")
        .stderr_has("did you mean `artifacts`?");
    Pd::new()
        .no_engine()
        .file(
            "job.yaml",
            "version: 1\nsandboxes:\n  fw: {}\nsteps:\n  fw:\n    uses: stm32\n    with: {src: b}\n",
        )
        .args(["validate", "job.yaml"])
        .code(2)
        .stderr_has("job.yaml:6:11: error: step `fw` does not give recipe `stm32` its required input `out`")
        .stderr_has("recipe `stm32` needs profile `embedded`, but step `fw` runs on sandbox `fw` of profile `minimal`");
}
