//! `Sandbox` keeps identity and lifecycle; the rest lives on its facets.
//! Held here: every `impl Sandbox` block is in `src/sandbox/mod.rs`, and
//! together they have at most 30 methods, delegates included.

use crate::common::source_files;

/// The most methods `Sandbox` may have.
const MOST: usize = 30;

/// The files (other than `allowed`) with an `impl Sandbox` block, and the
/// methods of the blocks in `allowed`.
fn survey(files: &[(String, String)], allowed: &str) -> (Vec<String>, Vec<String>) {
    let opens = |l: &str| {
        [
            "impl Sandbox {",
            "impl super::Sandbox {",
            "impl crate::sandbox::Sandbox {",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    };
    let mut elsewhere = Vec::new();
    let mut methods = Vec::new();
    for (path, text) in files {
        if path.starts_with("src/blocking/") {
            continue; // the blocking face's own `Sandbox`, another type
        }
        let mut inside = false;
        for line in text.lines() {
            if opens(line) {
                inside = true;
                if path != allowed {
                    elsewhere.push(path.clone());
                }
            } else if line == "}" {
                inside = false;
            } else if inside && path == allowed {
                let t = line.trim_start();
                let indent = line.len() - t.len();
                let t = t
                    .trim_start_matches("pub ")
                    .trim_start_matches("pub(crate) ");
                let t = t.trim_start_matches("async ");
                if indent == 4 {
                    if let Some(rest) = t.strip_prefix("fn ") {
                        methods.push(rest.split(['(', '<']).next().unwrap_or("").to_string());
                    }
                }
            }
        }
    }
    (elsewhere, methods)
}

#[test]
fn sandbox_has_at_most_30_methods_all_in_its_mod_rs() {
    let files = source_files("src", "rs");
    let (elsewhere, methods) = survey(&files, "src/sandbox/mod.rs");
    assert!(
        elsewhere.is_empty(),
        "`impl Sandbox` outside src/sandbox/mod.rs: {elsewhere:?}; put the \
         methods on a facet (commands, files, sessions, kernels, helper) or in a \
         free function of lifecycle/"
    );
    assert!(
        methods.len() >= 10,
        "found too few methods to trust: {methods:?}"
    );
    assert!(
        methods.len() <= MOST,
        "Sandbox has {} methods (at most {MOST}): {methods:?}",
        methods.len()
    );
}

#[test]
fn the_survey_catches_an_impl_elsewhere_and_counts_methods() {
    let files = vec![
        (
            "src/sandbox/mod.rs".to_string(),
            "impl Sandbox {\n    pub fn a(&self) {}\n    async fn b(&self) {\n        fn inner() {}\n    }\n}\n"
                .to_string(),
        ),
        (
            "src/sandbox/x.rs".to_string(),
            "impl super::Sandbox {\n    fn c(&self) {}\n}\n".to_string(),
        ),
    ];
    let (elsewhere, methods) = survey(&files, "src/sandbox/mod.rs");
    assert_eq!(elsewhere, ["src/sandbox/x.rs"]);
    assert_eq!(methods, ["a", "b"]);
}
