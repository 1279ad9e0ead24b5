//! One workflow job run as GitHub's runner runs it: each step a script file
//! under RUNNER_TEMP with its shell's flags, fresh GITHUB_ENV, GITHUB_PATH,
//! GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files per step, applied before the
//! next one, `if:` conditions, and local composite actions (`uses: ./`)
//! expanded into their steps. Third-party actions are left to the caller.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use crate::expr::Ctx;

/// A step's or action's outputs.
pub type Outputs = HashMap<String, String>;

/// Simulates a third-party action: (its `uses:`, its `with:`, the runner)
/// to its outputs, or why it failed.
pub type ThirdParty<'a> = dyn FnMut(&str, &Outputs, &Runner) -> Result<Outputs, String> + 'a;

/// The job's state between steps.
pub struct Runner {
    /// GITHUB_WORKSPACE.
    pub workspace: PathBuf,
    /// RUNNER_TEMP.
    pub temp: PathBuf,
    /// The variables GitHub sets, and the machine's PATH.
    pub base_env: Outputs,
    /// What steps wrote to GITHUB_ENV.
    pub env: Outputs,
    /// What steps wrote to GITHUB_PATH, newest first.
    pub path: Vec<String>,
    /// `steps.<id>.outputs` of the job.
    pub steps: HashMap<String, Outputs>,
    /// The step summaries, in order.
    pub summary: String,
    /// Every step's name and output, for failure messages.
    pub transcript: String,
    /// `::error` and `::warning` commands the runner would obey.
    pub annotations: Vec<String>,
    /// Whether a step failed.
    pub failed: bool,
    files: usize,
}

fn text(y: &Yaml) -> String {
    match y {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        _ => String::new(),
    }
}

fn map(y: &Yaml) -> Vec<(String, String)> {
    y.as_hash()
        .map(|h| h.iter().map(|(k, v)| (text(k), text(v))).collect())
        .unwrap_or_default()
}

/// The first document of a YAML file.
pub fn load(path: &Path) -> Yaml {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&s).unwrap().remove(0)
}

impl Runner {
    /// A runner for a job in `workspace`, temp files in `temp`.
    pub fn new(workspace: &Path, temp: &Path, base_env: Outputs) -> Runner {
        Runner {
            workspace: workspace.to_path_buf(),
            temp: temp.to_path_buf(),
            base_env,
            env: Outputs::new(),
            path: Vec::new(),
            steps: HashMap::new(),
            summary: String::new(),
            transcript: String::new(),
            annotations: Vec::new(),
            failed: false,
            files: 0,
        }
    }

    fn ctx<'a>(
        &'a self,
        contexts: &'a [(&'a str, &'a Outputs)],
        steps: &'a HashMap<String, Outputs>,
        failed: bool,
    ) -> Ctx<'a> {
        Ctx {
            contexts: contexts.iter().copied().collect(),
            steps,
            failed,
            workspace: &self.workspace,
        }
    }

    fn runner_ctx(&self) -> Outputs {
        [
            ("temp", self.temp.display().to_string()),
            ("os", "Linux".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Run job `job` of `workflow`.
    pub fn run_job(&mut self, workflow: &Yaml, job: &str, third_party: &mut ThirdParty) {
        let runner = self.runner_ctx();
        let github = Outputs::from([("workspace".into(), self.workspace.display().to_string())]);
        let mut env = Outputs::new();
        for scope in [&workflow["env"], &workflow["jobs"][job]["env"]] {
            for (k, v) in map(scope) {
                let ctxs = [("env", &env), ("runner", &runner), ("github", &github)];
                let v = self.ctx(&ctxs, &self.steps, false).interpolate(&v);
                env.insert(k, v);
            }
        }
        let steps = workflow["jobs"][job]["steps"].as_vec().expect("job steps");
        for step in steps {
            let name = text(&step["name"]);
            let name = if name.is_empty() {
                text(&step["uses"])
            } else {
                name
            };
            let steps_now = self.steps.clone();
            let ctxs = [("env", &env), ("runner", &runner), ("github", &github)];
            let ctx = self.ctx(&ctxs, &steps_now, self.failed);
            let cond = text(&step["if"]);
            if !ctx.condition(if cond.is_empty() { "success()" } else { &cond }) {
                let _ = writeln!(self.transcript, "\n== {name}: skipped");
                continue;
            }
            let mut step_env = env.clone();
            for (k, v) in map(&step["env"]) {
                step_env.insert(k, ctx.interpolate(&v));
            }
            let with: Outputs = map(&step["with"])
                .into_iter()
                .map(|(k, v)| (k, ctx.interpolate(&v)))
                .collect();
            let run = ctx.interpolate(&text(&step["run"]));
            let _ = writeln!(self.transcript, "\n== {name}");
            let result = match step["uses"].as_str() {
                Some("./") => self.composite(&with, &step_env),
                Some(uses) => third_party(uses, &with, self),
                None => self.shell(&run, &text(&step["shell"]), &step_env),
            };
            match result {
                Ok(outputs) => {
                    if let Some(id) = step["id"].as_str() {
                        self.steps.insert(id.to_string(), outputs);
                    }
                }
                Err(why) => {
                    let _ = writeln!(self.transcript, "!! {name} failed: {why}");
                    self.failed = true;
                }
            }
        }
    }

    /// The action in the workspace's action.yml, as GitHub expands a local
    /// composite action.
    fn composite(&mut self, with: &Outputs, env: &Outputs) -> Result<Outputs, String> {
        let action = load(&self.workspace.join("action.yml"));
        let mut inputs = Outputs::new();
        for (k, v) in action["inputs"].as_hash().unwrap() {
            inputs.insert(text(k), text(&v["default"]));
        }
        for (k, v) in with {
            assert!(inputs.contains_key(k), "action.yml has no input {k}");
            inputs.insert(k.clone(), v.clone());
        }
        let runner = self.runner_ctx();
        // A local action has no action repository of its own.
        let github = Outputs::from([
            ("action_path".into(), self.workspace.display().to_string()),
            ("action_repository".into(), String::new()),
            ("workspace".into(), self.workspace.display().to_string()),
        ]);
        let mut inner: HashMap<String, Outputs> = HashMap::new();
        let mut failed = None;
        for step in action["runs"]["steps"].as_vec().unwrap() {
            let ctxs = [
                ("inputs", &inputs),
                ("env", env),
                ("runner", &runner),
                ("github", &github),
            ];
            let ctx = self.ctx(&ctxs, &inner, failed.is_some());
            let cond = text(&step["if"]);
            if !ctx.condition(if cond.is_empty() { "success()" } else { &cond }) {
                continue;
            }
            let mut step_env = env.clone();
            step_env.insert("GITHUB_ACTION_PATH".into(), github["action_path"].clone());
            for (k, v) in map(&step["env"]) {
                step_env.insert(k, ctx.interpolate(&v));
            }
            let run = ctx.interpolate(&text(&step["run"]));
            let _ = writeln!(self.transcript, "-- {}", text(&step["name"]));
            match self.shell(&run, &text(&step["shell"]), &step_env) {
                Ok(o) => {
                    if let Some(id) = step["id"].as_str() {
                        inner.insert(id.to_string(), o);
                    }
                }
                Err(e) => failed = Some(e),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        let ctxs = [("inputs", &inputs)];
        let ctx = self.ctx(&ctxs, &inner, false);
        Ok(map(&action["outputs"])
            .into_iter()
            .map(|(k, _)| {
                let v = text(&action["outputs"][k.as_str()]["value"]);
                (k, ctx.interpolate(&v))
            })
            .collect())
    }

    /// A new empty file under RUNNER_TEMP for one step's `kind` commands.
    fn file(&mut self, kind: &str) -> PathBuf {
        self.files += 1;
        let dir = self.temp.join("_runner_file_commands");
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!("{kind}_{}", self.files));
        std::fs::write(&p, "").unwrap();
        p
    }

    /// A `run:` script, as the runner runs it: a file under RUNNER_TEMP,
    /// `bash -e` by default, `--noprofile --norc -eo pipefail` for `shell: bash`.
    fn shell(&mut self, run: &str, shell: &str, env: &Outputs) -> Result<Outputs, String> {
        let script = self.file("script");
        std::fs::write(&script, run).unwrap();
        let files: Vec<(&str, PathBuf)> = [
            "GITHUB_ENV",
            "GITHUB_PATH",
            "GITHUB_OUTPUT",
            "GITHUB_STEP_SUMMARY",
        ]
        .into_iter()
        .map(|k| (k, self.file(&k.to_lowercase())))
        .collect();
        let mut cmd = Command::new("bash");
        match shell {
            "" => cmd.arg("-e"),
            "bash" => cmd.args(["--noprofile", "--norc", "-eo", "pipefail"]),
            other => panic!("the rehearsal runs bash steps only, not {other}"),
        };
        let mut path = self.path.clone();
        path.push(self.base_env["PATH"].clone());
        cmd.arg(&script)
            .current_dir(&self.workspace)
            .env_clear()
            .envs(&self.base_env)
            .envs(&self.env)
            .envs(env)
            .env("PATH", path.join(":"))
            .envs(files.iter().map(|(k, p)| (k, p)));
        let o = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).to_string();
        self.transcript += &stdout;
        self.transcript += &String::from_utf8_lossy(&o.stderr);
        self.obey(&stdout);
        let read = |k: &str| {
            let p = &files.iter().find(|(n, _)| *n == k).unwrap().1;
            std::fs::read_to_string(p).unwrap()
        };
        self.env.extend(key_values(&read("GITHUB_ENV")));
        // As the runner does: a directory added again moves to the front.
        for line in read("GITHUB_PATH").lines().filter(|l| !l.is_empty()) {
            self.path.retain(|p| p != line);
            self.path.insert(0, line.to_string());
        }
        self.summary += &read("GITHUB_STEP_SUMMARY");
        if o.status.success() {
            Ok(key_values(&read("GITHUB_OUTPUT")))
        } else {
            Err(format!("{}", o.status))
        }
    }

    /// Workflow commands in a step's output, as the runner reads them:
    /// nothing between `::stop-commands::TOKEN` and `::TOKEN::`.
    fn obey(&mut self, stdout: &str) {
        let mut stopped: Option<String> = None;
        for line in stdout.lines() {
            if let Some(token) = &stopped {
                if line == format!("::{token}::") {
                    stopped = None;
                }
            } else if let Some(t) = line.strip_prefix("::stop-commands::") {
                stopped = Some(t.to_string());
            } else if line.starts_with("::error") || line.starts_with("::warning") {
                self.annotations.push(line.to_string());
            }
        }
    }
}

/// A GITHUB_ENV or GITHUB_OUTPUT file: `k=v` lines and `k<<DELIM` blocks.
pub fn key_values(s: &str) -> Outputs {
    let mut out = Outputs::new();
    let mut lines = s.lines();
    while let Some(line) = lines.next() {
        if let Some((k, v)) = line.split_once('=') {
            if !k.contains("<<") {
                out.insert(k.to_string(), v.to_string());
                continue;
            }
        }
        if let Some((k, delim)) = line.split_once("<<") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != delim).collect();
            out.insert(k.to_string(), body.join("\n"));
        }
    }
    out
}
