//! The third-party actions of the example workflow, as they would act on
//! a fresh runner: checkout, cache (a miss), the test report (junitparser
//! reads the JUnit file) and upload-artifact.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::repo;
use crate::runner::{Outputs, Runner};

/// The repository's tracked files (as they are in the work tree), as
/// actions/checkout would put them in the workspace.
pub fn checkout(workspace: &Path) {
    let o = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(o.status.success());
    for f in o.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let f = Path::new(std::str::from_utf8(f).unwrap());
        let (from, to) = (repo().join(f), workspace.join(f));
        if from.is_file() {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
    }
}

/// The JUnit file read by junitparser: `{tests, failures, cases: [name]}`.
pub fn junit(path: &Path) -> serde_json::Value {
    const SCRIPT: &str = r"
import json, sys
from junitparser import JUnitXml, TestSuite
xml = JUnitXml.fromfile(sys.argv[1])
s = xml if isinstance(xml, TestSuite) else list(xml)[0]
print(json.dumps({'tests': s.tests, 'failures': s.failures, 'errors': s.errors,
                  'cases': [c.name for c in s]}))
";
    let venv = std::env::var_os("POCKETDOCK_TEST_VENV")
        .map_or_else(|| repo().join("target/ci-venv"), PathBuf::from);
    let o = Command::new(venv.join("bin/python"))
        .args(["-c", SCRIPT])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/provision.sh makes it)", venv.display()));
    assert!(
        o.status.success(),
        "junitparser on {}:\n{}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What the third-party actions of the workflow would do here.
#[derive(Default)]
pub struct Simulated {
    pub cache_path: Option<PathBuf>,
    pub junit: Option<serde_json::Value>,
    pub uploaded: Option<PathBuf>,
}

impl Simulated {
    pub fn run(&mut self, uses: &str, with: &Outputs, r: &Runner) -> Result<Outputs, String> {
        let name = uses.split('@').next().unwrap();
        let mut out = Outputs::new();
        match name {
            "actions/checkout" => checkout(&r.workspace),
            // A fresh runner: a miss. Its post step saves `path`.
            "actions/cache" => {
                self.cache_path = Some(PathBuf::from(&with["path"]));
                out.insert("cache-hit".into(), "false".into());
            }
            "mikepenz/action-junit-report" => {
                let p = r.workspace.join(&with["report_paths"]);
                if !p.is_file() {
                    return Err(format!("no JUnit file at {}", p.display()));
                }
                self.junit = Some(junit(&p));
            }
            "actions/upload-artifact" => {
                // Nothing to upload fails only with `if-no-files-found: error`.
                let p = PathBuf::from(&with["path"]);
                if p.is_dir() {
                    self.uploaded = Some(p);
                } else if with.get("if-no-files-found").is_some_and(|v| v == "error") {
                    return Err(format!("no artifact at {}", p.display()));
                }
            }
            _ => panic!("the rehearsal does not know the action {uses}"),
        }
        Ok(out)
    }
}
