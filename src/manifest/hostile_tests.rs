//! Hostile and odd input: each test pins a way the front end once
//! panicked, overflowed its stack, blew up in memory or lied about a
//! position (issue 15). Every one must end in a diagnostic with a position.

use std::fmt::Write;
use std::path::Path;
use std::time::Instant;

use super::*;

use super::tests::yaml;

fn kdl(text: &str) -> Result<Manifest, ManifestError> {
    parse(
        Path::new("job.kdl"),
        text,
        Format::Kdl,
        &LoadOptions::default(),
    )
}

#[track_caller]
fn first(r: Result<Manifest, ManifestError>) -> Diagnostic {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e
            .diagnostics()
            .first()
            .cloned()
            .unwrap_or_else(|| panic!("{e}")),
    }
}

// Regression: `run: echo hi\0; rm -rf /tmp/x` was read as `run: echo hi`
// (yaml-rust2 ends the input at a NUL) and the steps after it vanished.
#[test]
fn nul_byte_truncated_the_manifest() {
    let d = first(yaml(
        "version: 1\nsandboxes:\n  s: {}\nsteps:\n  a:\n    run: echo hi\0; rm -rf /tmp/x\n  b: {run: x}\n",
    ));
    assert_eq!(d.message, "the manifest contains a NUL byte");
    assert_eq!(d.position(), "6:17");
    let d = first(kdl("version 1\nname \"a\0\"\n"));
    assert_eq!(d.position(), "2:8");
}

// Regression: a file that is not UTF-8 failed with no position.
#[test]
fn non_utf8_input_had_no_position() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.yaml");
    std::fs::write(&file, b"version: 1\nname: r\xe9sum\xe9\n").unwrap();
    let d = first(load(&file, &LoadOptions::default()));
    assert_eq!(d.position(), "2:8");
    assert!(d.message.contains("not UTF-8"), "{}", d.message);
}

// Regression: a UTF-8 byte order mark made a valid manifest fail with
// "unknown key `\u{feff}version`".
#[test]
fn byte_order_mark_was_read_as_part_of_the_first_key() {
    let m = yaml("\u{feff}version: 1\nname: x\n").unwrap();
    assert_eq!(m.name.unwrap().value, "x");
    // Positions on the first line do not count the mark.
    let d = first(yaml("\u{feff}version: 2\n"));
    assert_eq!(d.position(), "1:10");
}

// Regression: an empty value (`mem:` then a newline) was reported on the
// next line, where yaml-rust2 marks the next token.
#[test]
fn empty_value_was_reported_on_the_next_line() {
    let d = first(yaml(
        "version: 1\nsandboxes:\n  s:\n    mem:\n    cpu: 10\n",
    ));
    assert_eq!(d.message, "`mem` must be a string, found nothing");
    assert_eq!(d.position(), "4:9");
    let d = first(yaml(
        "version: 1\nsandboxes:\n  s:\n    mem:   # none\n\n    cpu: 10\n",
    ));
    assert_eq!(d.position(), "4:9");
}

// Regression: a 585-byte "billion laughs" grew to 10 GB and beyond.
#[test]
fn alias_bomb_grew_without_bound() {
    let mut text =
        String::from("version: 1\nvars:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (prev, name) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
    {
        let items = vec![format!("*{prev}"); 9].join(", ");
        writeln!(text, "  {name}: &{name} [{items}]").unwrap();
    }
    let start = Instant::now();
    let d = first(yaml(&text));
    assert!(start.elapsed().as_secs() < 2);
    assert!(
        d.message.starts_with("aliases copy more than 10000 nodes"),
        "{}",
        d.message
    );
    assert!(d.hint.unwrap().contains("--limit aliases="));
    // Ordinary anchors still work.
    let m = yaml("version: 1\nvars:\n  a: &x {k: [1, 2]}\n  b: *x\n").unwrap();
    assert_eq!(m.vars["b"], serde_json::json!({"k": [1, 2]}));
}

// Regression: YAML nested ~10,000 deep overflowed the stack (SIGABRT):
// `Parser::load` recursed once per level.
#[test]
fn deep_yaml_overflowed_the_stack() {
    let n = 100_000;
    let block = format!("version: 1\nvars:\n  x:\n    {}x\n", "- ".repeat(n));
    let d = first(yaml(&block));
    assert!(d.message.contains("more than 64 deep"), "{}", d.message);
    assert_eq!(d.line, 4);
    let flow = format!(
        "version: 1\nvars:\n  x: {}{}\n",
        "{a: ".repeat(n),
        "}".repeat(n)
    );
    assert!(first(yaml(&flow)).message.contains("deep"));
    let seqs = format!(
        "version: 1\nvars:\n  x: {}{}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    let d = first(yaml(&seqs));
    assert!(
        d.message.contains("deep") || d.message.contains("recursion"),
        "{}",
        d.message
    );
    // Aliases cannot stack depth past the limit either.
    let mut text = String::from("version: 1\nvars:\n  a0: &a0 [[[[[[[[[[1]]]]]]]]]]\n");
    for i in 1..10 {
        writeln!(text, "  a{i}: &a{i} [[[[[[[[[[*a{}]]]]]]]]]]", i - 1).unwrap();
    }
    assert!(first(yaml(&text)).message.contains("deep"));
    // A raised limit lets a deeper file through.
    let opts = LoadOptions {
        limits: vec![(Limit::Depth, 200)],
        ..LoadOptions::default()
    };
    let deep = format!(
        "version: 1\nvars:\n  x: {}1{}\n",
        "[".repeat(100),
        "]".repeat(100)
    );
    assert!(first(yaml(&deep)).message.contains("deep"));
    parse(Path::new("job.yaml"), &deep, Format::Yaml, &opts).unwrap();
}

// Regression: KDL nested ~1,400 nodes deep (an 8 KB file) overflowed the
// stack inside the kdl crate.
#[test]
fn deep_kdl_overflowed_the_stack() {
    let n = 100_000;
    let text = format!(
        "version 1\nvars {{\n{}{}\n}}\n",
        "a {".repeat(n),
        "}".repeat(n)
    );
    let d = first(kdl(&text));
    assert!(d.message.contains("more than 64 deep"), "{}", d.message);
    // Line 2 opens one level: the 64th brace of line 3 is the 65th.
    assert_eq!(d.position(), "3:192");
    // Braces inside strings and comments do not count.
    let quiet = format!(
        "version 1\nname \"{0}\"\n// {0}\n/* {0} */\nvars {{ x #\"{0}\"# }}\n",
        "{".repeat(100)
    );
    kdl(&quiet).unwrap();
}

// Regression (fuzzing, 2026-11-29): blocks nested under slash-dashes made
// the kdl crate's parse take time doubling with each level: 684 bytes took
// 17 s, `/- a {\n b\n` twenty times longer than anyone waits. Past
// SLASHDASH_DEPTH it is a diagnostic before the kdl crate sees the text.
#[test]
fn kdl_blocks_nested_under_slashdashes_took_exponential_time() {
    for unit in ["/- a {\n b\n", "a /-{\n", "/-a { /-b {\n"] {
        let text = format!("version 1\n{}", unit.repeat(30));
        let d = first(kdl(&text));
        assert!(
            d.message.contains("under a `/-` more than 8 deep"),
            "{unit:?}: {}",
            d.message
        );
    }
    // The fuzzer's input: broken strings the parser reads past.
    let found = include_str!("../../fuzz/seeds/kdl/timeout-ad277e21ff.kdl");
    assert!(first(kdl(found)).message.contains("under a `/-`"));
    // Balanced, too: the time was in the slash-dash, not the open brace.
    let balanced = format!("version 1\n{}{}", "a /-{\n".repeat(40), "}\n".repeat(40));
    assert!(first(kdl(&balanced)).message.contains("under a `/-`"));
    // Commented-out steps, a few levels deep, still parse; a slash-dash
    // ends with its node, and the same depth unslashed is fine.
    let ok = "version 1\nsandbox \"s\"\n/- step \"a\" { run \"x\"; needs { - \"b\" } }\nstep \"b\" sandbox=\"s\" { run \"y\" }\n";
    kdl(ok).unwrap();
    let plain = format!(
        "version 1\nvars {{\n{}{}\n}}\n",
        "a {".repeat(40),
        "}".repeat(40)
    );
    kdl(&plain).unwrap();
    let ended = format!(
        "version 1\nvars {{\n{}}}\n",
        "/- a\nb {".repeat(20) + &"}".repeat(20)
    );
    kdl(&ended).unwrap();
}

// Regression (fuzzing, 2026-11-29, timeout-6df5f97849): broken text with
// slash-dashes and stray braces in strings, which the depth guard reads as
// closed, took the kdl crate's recovery 20 s and 1.7 million diagnostics
// (65,536 copies of each). Blanking the slash-dashes for a first parse
// reports the text's 88 errors at once.
#[test]
fn broken_kdl_under_many_slashdashes_is_reported_at_once() {
    let found = include_str!("../../fuzz/seeds/kdl/timeout-6df5f97849.kdl");
    let diags = kdl(found).unwrap_err().diagnostics().to_vec();
    assert!(!diags.is_empty() && diags.len() < 1000, "{}", diags.len());
    // A slash-dash still comments out in valid text.
    let ok = "version 1\nsandbox \"s\"\n/- step \"a\" { run \"x /- y\" }\nstep \"b\" sandbox=\"s\" { run \"y\" }\n";
    kdl(ok).unwrap();
}

// Regression: the file was read whole, so `validate /dev/zero` read 8 GB;
// and a FIFO hung `validate` waiting for a writer. Neither is a file: both
// are refused before anything is read, and a large file is read no
// further than the cap.
#[test]
fn only_regular_files_are_read_and_only_up_to_the_cap() {
    let start = Instant::now();
    let d = first(load(Path::new("/dev/zero"), &LoadOptions::default()));
    assert!(start.elapsed().as_secs() < 2);
    assert_eq!(d.message, "/dev/zero is a device, not a regular file");
    assert!(d.hint.unwrap().contains("regular file"));

    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("job.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let d = first(load(&fifo, &LoadOptions::default()));
    assert!(
        d.message
            .ends_with("is a FIFO (named pipe), not a regular file"),
        "{}",
        d.message
    );
    assert!(start.elapsed().as_secs() < 2);
    let d = first(load(dir.path(), &LoadOptions::default()));
    assert!(
        d.message.ends_with("is a directory, not a regular file"),
        "{}",
        d.message
    );

    let big = dir.path().join("big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let d = first(load(&big, &LoadOptions::default()));
    assert!(start.elapsed().as_secs() < 2);
    assert!(
        d.message.contains("larger than 4194304 bytes"),
        "{}",
        d.message
    );
    assert!(d.hint.unwrap().contains("--limit file_size="));
}

#[test]
fn limits_map_raises_up_to_a_ceiling_and_flags_win() {
    let m = yaml("version: 1\nlimits: {matrix: 5000, template-fuel: 200000}\n").unwrap();
    assert_eq!(m.limits.get(Limit::Matrix), 5000);
    assert_eq!(m.limits.get(Limit::TemplateFuel), 200_000);
    let d = first(yaml("version: 1\nlimits: {matrix: 100000}\n"));
    assert_eq!(d.position(), "2:18");
    assert!(d.hint.unwrap().contains("--limit matrix=N"));
    let d = first(yaml("version: 1\nlimits: {depth: 1000}\n"));
    assert_eq!(d.message, "a manifest cannot set the `depth` limit");
    let d = first(yaml("version: 1\nlimits: {matrx: 10}\n"));
    assert_eq!(d.hint.as_deref(), Some("did you mean `matrix`?"));
    let opts = LoadOptions {
        limits: vec![(Limit::Matrix, 7)],
        ..LoadOptions::default()
    };
    let m = parse(
        Path::new("j.yaml"),
        "version: 1\nlimits: {matrix: 5000}\n",
        Format::Yaml,
        &opts,
    )
    .unwrap();
    assert_eq!(m.limits.get(Limit::Matrix), 7);
    let m = kdl("version 1\nlimits { sandboxes 2000 }\n").unwrap();
    assert_eq!(m.limits.get(Limit::Sandboxes), 2000);
}

// Found by fuzzing (crash-1f5c76ff): lone CRs end lines for yaml-rust2;
// the error after them was reported at line 1, column 73, past the line.
#[test]
fn fuzz_crash_1f5c76ff_error_after_lone_carriage_returns() {
    let text = format!(
        "vemaxAoutputars:t u{{sd {{studennts: [h, en{}",
        "\r".repeat(24)
    );
    let d = first(yaml(&text));
    assert_eq!(d.position(), "25:1");
    assert!(d.message.contains("flow sequence"), "{}", d.message);
}

/// Texts that mix scripts, widths and directions.
const WORDS: [&str; 8] = [
    "日本語",
    "😀👍🏽",
    "e\u{301}te\u{301}",
    "עברית",
    "العربية",
    "ascii",
    "Ω≈ç√",
    "\u{200f}x\u{200e}",
];

// Property: non-ASCII text anywhere never panics, and every reported
// column points at the character the mistake is at.
#[test]
fn non_ascii_text_never_panics_and_columns_point_at_the_right_character() {
    let mut seed = 0x9e37_79b9_u32;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed as usize % n
    };
    for _ in 0..300 {
        let w = |next: &mut dyn FnMut(usize) -> usize| WORDS[next(WORDS.len())].to_string();
        let name = w(&mut next);
        let cmd = w(&mut next);
        let bad = format!("{}{}", w(&mut next), next(1000));
        // An unknown key after non-ASCII text on the same line.
        let text = format!(
            "version: 1\nname: \"{name}\"\nsandboxes:\n  s: {{env: {{A: \"{cmd}\"}}, {bad}: 1}}\n"
        );
        let d = first(yaml(&text));
        let line = text.lines().nth(d.line - 1).unwrap();
        let at: String = line
            .chars()
            .skip(d.col - 1)
            .take(bad.chars().count())
            .collect();
        assert_eq!(at, bad, "{text}");
        // The same in KDL: a bad size after non-ASCII text.
        let text =
            format!("version 1\nname \"{name}\"\nsandbox \"s\" workdir=\"{cmd}\" mem=\"{bad}\"\n");
        let d = first(kdl(&text));
        let line = text.lines().nth(d.line - 1).unwrap();
        if text.contains('\u{200f}') {
            // KDL forbids bidi controls: the error is at the string
            // holding the first one.
            let at: String = line.chars().skip(d.col - 1).take(2).collect();
            assert_eq!(at, "\"\u{200f}", "{text}: {d}");
            continue;
        }
        let at: String = line
            .chars()
            .skip(d.col - 1)
            .take(bad.chars().count() + 2)
            .collect();
        assert_eq!(at, format!("\"{bad}\""), "{text}");
    }
}
