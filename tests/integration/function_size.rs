//! Functions stay short enough to read: at most five in `src/` (tests
//! included) run to 100 lines or more. A long one is split where a name
//! helps a reader; the few left say why they are whole in their own doc.

use crate::common::source_files;

const LONG: usize = 100;
const ALLOWED: usize = 5;

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
    for (path, text) in source_files("src", "rs") {
        for (line, name, len) in functions(&text) {
            if len >= LONG {
                long.push((len, format!("{path}:{line} {name}")));
            }
        }
    }
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
