//! Functions stay short enough to read: at most five in `src/` (tests
//! included) run to 100 lines or more. A long one is split where a name
//! helps a reader; the few left say why they are whole in their own doc.

use std::path::Path;

use crate::common::repo;

const LONG: usize = 100;
const ALLOWED: usize = 5;

/// `(lines, file:line name)` of every function of `LONG` lines or more.
fn long_functions(dir: &Path, out: &mut Vec<(usize, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            long_functions(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            for (line, name, len) in functions(&text) {
                if len >= LONG {
                    let file = path.strip_prefix(repo()).unwrap_or(&path);
                    out.push((len, format!("{}:{line} {name}", file.display())));
                }
            }
        }
    }
}

/// `(first line, name, length in lines)` of each `fn` with a body: from its
/// signature to the `}` at the signature's indent (rustfmt's layout).
fn functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let Some(name) = fn_name(body) else { continue };
        if line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| l.trim_end() == close) {
            out.push((i + 1, name, end + 2));
        }
    }
    out
}

/// The name when the line declares a function.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "async ",
        "const ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn the_counter_counts() {
    let text = "fn short() {\n}\n\n    pub async fn long() {\n".to_string()
        + &"        x();\n".repeat(120)
        + "    }\nfn decl();\n";
    let found = functions(&text);
    assert_eq!(found[0], (1, "short".to_string(), 2));
    assert_eq!(found[1], (4, "long".to_string(), 122));
    assert_eq!(found.len(), 2);
}

#[test]
fn at_most_five_functions_are_long() {
    let mut long = Vec::new();
    long_functions(&repo().join("src"), &mut long);
    long.sort_by(|a, b| b.cmp(a));
    let list: Vec<String> = long.iter().map(|(n, f)| format!("{n:>4} {f}")).collect();
    assert!(
        long.len() <= ALLOWED,
        "{} functions in src/ are {LONG} lines or more (at most {ALLOWED}); split \
         where a name helps a reader:\n{}",
        long.len(),
        list.join("\n")
    );
}
