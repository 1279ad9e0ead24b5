//! The plan as text (waves), JSON (for machines) and Graphviz DOT.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::Plan;
use crate::sandbox::SandboxSpec;
use crate::size::ByteSize;

fn spec_json(spec: &SandboxSpec) -> Value {
    let mut v = json!({
        "profile": spec.profile,
        "image": spec.image,
        "mem": spec.mem.bytes(),
        "cpu_percent": spec.cpu_percent,
        "pids_limit": spec.pids_limit,
        "network": spec.network,
        "env": spec.env.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        "workdir": spec.workdir,
        "ports": spec.ports.iter().map(|p| match p.host {
            Some(h) => format!("{h}:{}/{}", p.container, p.proto),
            None => format!("{}/{}", p.container, p.proto),
        }).collect::<Vec<_>>(),
        "volumes": spec.volumes.iter().map(|v| format!("{}:{}{}", v.host, v.container, if v.read_only { ":ro" } else { "" })).collect::<Vec<_>>(),
        "devices": spec.devices,
        "persist": spec.persist,
        "tmp": spec.tmp.map(ByteSize::bytes),
        "read_only": spec.read_only,
        "disk": spec.disk.map(ByteSize::bytes),
    });
    if spec.network && spec.dns_blocked {
        v["dns_blocked"] = true.into();
    }
    v
}

fn dot_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Plan {
    /// One line per wave: `wave 1: tests@grader[student=alice], …`.
    #[must_use]
    pub fn to_text(&self) -> String {
        let waves = self.waves();
        let mut s = format!(
            "job {}: {} sandbox{}, {} step{}, {} wave{}\n",
            self.job_name,
            self.sandboxes.len(),
            if self.sandboxes.len() == 1 { "" } else { "es" },
            self.steps.len(),
            if self.steps.len() == 1 { "" } else { "s" },
            waves.len(),
            if waves.len() == 1 { "" } else { "s" },
        );
        for (i, wave) in waves.iter().enumerate() {
            let ids: Vec<&str> = wave.iter().map(|&s| self.steps[s].id.as_str()).collect();
            let _ = writeln!(s, "wave {}: {}", i + 1, ids.join(", "));
        }
        s
    }

    /// The plan as JSON: job, sandboxes with their specs, steps with their
    /// needs and wave, and the waves.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let sandboxes: Vec<Value> = self
            .sandboxes
            .iter()
            .map(|sb| {
                json!({
                    "index": sb.index,
                    "id": sb.id,
                    "sandbox": sb.sandbox,
                    "matrix": sb.matrix,
                    "persist": sb.persist,
                    "build": if sb.build { "auto" } else { "never" },
                    "spec": spec_json(&sb.spec),
                    "steps": self.steps_on(sb.index),
                })
            })
            .collect();
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|st| {
                let mut v = json!({
                    "index": st.index,
                    "id": st.id,
                    "step": st.step,
                    "sandbox": st.sandbox,
                    "matrix": st.matrix,
                    "action": st.decl.action.kind(),
                    "needs": st.needs,
                    "wave": self.wave_of(st.index) + 1,
                });
                // A recipe's step says which using step and recipe it came from.
                if let Some(u) = self.recipe_use(st.index) {
                    v["uses"] = json!({ "step": u.step, "recipe": u.recipe });
                }
                v
            })
            .collect();
        json!({
            "job": { "name": self.job_name, "id": self.job_id },
            "manifest": self.manifest.path().display().to_string(),
            "sandboxes": sandboxes,
            "steps": steps,
            "waves": self.waves(),
        })
    }

    /// The step graph in Graphviz DOT, one cluster per sandbox instance.
    #[must_use]
    pub fn to_dot(&self) -> String {
        let mut s = format!(
            "digraph {} {{\n  rankdir=LR;\n  node [shape=box];\n",
            dot_quote(&self.job_name)
        );
        for sb in &self.sandboxes {
            let _ = writeln!(
                s,
                "  subgraph {} {{\n    label={};",
                dot_quote(&format!("cluster_{}", sb.index)),
                dot_quote(&sb.id)
            );
            for &st in self.steps_on(sb.index) {
                let step = &self.steps[st];
                let _ = writeln!(
                    s,
                    "    s{} [label={}];",
                    st,
                    dot_quote(&format!("{} ({})", step.step, step.decl.action.kind()))
                );
            }
            s.push_str("  }\n");
        }
        for st in &self.steps {
            for &n in &st.needs {
                let _ = writeln!(s, "  s{n} -> s{};", st.index);
            }
        }
        s.push_str("}\n");
        s
    }
}
