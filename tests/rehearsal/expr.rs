//! The part of GitHub's expression language the example workflow and
//! action.yml use: contexts, string literals, `==`/`!=`, `!`, the status
//! functions and `hashFiles`. Anything else panics, so a workflow the
//! rehearsal cannot follow fails it instead of being half-run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// What an expression can see.
pub struct Ctx<'a> {
    /// `env.*`, `runner.*`, `github.*`, `inputs.*`: name -> value.
    pub contexts: HashMap<&'a str, &'a HashMap<String, String>>,
    /// `steps.<id>.outputs.<name>`.
    pub steps: &'a HashMap<String, HashMap<String, String>>,
    /// Whether an earlier step failed.
    pub failed: bool,
    /// `hashFiles` reads here.
    pub workspace: &'a Path,
}

impl Ctx<'_> {
    /// `s` with each `${{ ... }}` replaced by its value.
    pub fn interpolate(&self, s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("${{") {
            out.push_str(&rest[..i]);
            let end = rest[i..].find("}}").expect("unclosed ${{") + i;
            out.push_str(&self.eval(&rest[i + 3..end]));
            rest = &rest[end + 2..];
        }
        out + rest
    }

    /// An `if:` condition (with or without `${{ }}`).
    pub fn condition(&self, cond: &str) -> bool {
        let c = cond.trim();
        let c = c
            .strip_prefix("${{")
            .and_then(|c| c.strip_suffix("}}"))
            .unwrap_or(c);
        // Without a status function, GitHub reads `success() && (cond)`.
        let status = ["success()", "failure()", "always()", "cancelled()"];
        if self.failed && !status.iter().any(|f| c.contains(f)) {
            return false;
        }
        truthy(&self.eval(c))
    }

    fn eval(&self, e: &str) -> String {
        let e = e.trim();
        for op in ["==", "!="] {
            if let Some((a, b)) = e.split_once(&format!(" {op} ")) {
                let same = self.eval(a).eq_ignore_ascii_case(&self.eval(b));
                return (same == (op == "==")).to_string();
            }
        }
        if let Some(inner) = e.strip_prefix('!') {
            return (!truthy(&self.eval(inner))).to_string();
        }
        if let Some(lit) = e.strip_prefix('\'').and_then(|e| e.strip_suffix('\'')) {
            return lit.replace("''", "'");
        }
        match e {
            "success()" => return (!self.failed).to_string(),
            "failure()" => return self.failed.to_string(),
            "cancelled()" => return "false".into(),
            "always()" => return "true".into(),
            _ => {}
        }
        if let Some(arg) = e
            .strip_prefix("hashFiles(")
            .and_then(|e| e.strip_suffix(')'))
        {
            return hash_files(self.workspace, arg.trim().trim_matches('\''));
        }
        let parts: Vec<&str> = e.split('.').collect();
        match parts.as_slice() {
            ["steps", id, "outputs", name] => self
                .steps
                .get(*id)
                .and_then(|o| o.get(*name))
                .cloned()
                .unwrap_or_default(),
            [ctx, name] if self.contexts.contains_key(ctx) => {
                self.contexts[ctx].get(*name).cloned().unwrap_or_default()
            }
            _ => panic!("the rehearsal cannot evaluate `{e}`"),
        }
    }
}

fn truthy(v: &str) -> bool {
    !v.is_empty() && v != "false" && v != "0"
}

/// GitHub's hashFiles for a `dir/**` pattern: SHA-256 over each file's
/// SHA-256, files in path order; empty when nothing matches.
fn hash_files(workspace: &Path, pattern: &str) -> String {
    let dir = pattern
        .strip_suffix("/**")
        .unwrap_or_else(|| panic!("the rehearsal only knows hashFiles('dir/**'), not {pattern}"));
    let mut files = Vec::new();
    walk(&workspace.join(dir), &mut files);
    if files.is_empty() {
        return String::new();
    }
    files.sort();
    let mut all = Sha256::new();
    for f in files {
        all.update(Sha256::digest(std::fs::read(f).unwrap()));
    }
    format!("{:x}", all.finalize())
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, files);
        } else {
            files.push(p);
        }
    }
}
