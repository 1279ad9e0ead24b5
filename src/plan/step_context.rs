//! What a step's templates see: the job, its matrix, and the results of
//! the finished steps it may read. Which results those are is the plan's
//! to say (it knows the graph); how they look is the template layer's.

use super::Plan;
use crate::template::{Context, InstanceResult, StepResult};

impl Plan {
    /// The template context of `step` before any result is known: `vars`,
    /// `env`, `job` and its `matrix`.
    #[must_use]
    pub fn context(&self, step: usize) -> Context {
        Context::for_job(
            &self.manifest.limits,
            &self.manifest.vars,
            &self.manifest.env,
            &self.job_name,
            &self.job_id,
        )
        .for_instance(&self.steps[step].matrix)
    }

    /// The context of `step` with the results of finished steps under
    /// `steps.<id>`: for a step on the same sandbox, the instance on the same
    /// combination; for a step with one instance, that one; for a fanned-out
    /// step seen from another sandbox, `{"instances": [...]}` with one entry
    /// per finished instance (its result plus `sandbox` and `matrix`).
    pub fn context_with_results<'r>(
        &self,
        step: usize,
        result: impl Fn(usize) -> Option<&'r StepResult>,
    ) -> Context {
        let mut ctx = self.context(step);
        let me = &self.steps[step];
        let my_sandbox = &self.sandboxes[me.sandbox].sandbox;
        for range in &self.instances_of_step {
            let Some(first) = range.clone().next() else {
                continue;
            };
            let id = &self.steps[first].step;
            let same_sandbox = &self.sandboxes[self.steps[first].sandbox].sandbox == my_sandbox;
            if same_sandbox || range.len() == 1 {
                let instance = if same_sandbox {
                    range.clone().find(|&i| self.steps[i].sandbox == me.sandbox)
                } else {
                    Some(first)
                };
                if let Some(r) = instance.and_then(&result) {
                    ctx.set_step(id, r);
                }
            } else {
                let finished = range.clone().filter_map(|i| {
                    Some(InstanceResult {
                        sandbox: &self.sandboxes[self.steps[i].sandbox].id,
                        matrix: &self.steps[i].matrix,
                        result: result(i)?,
                    })
                });
                ctx.set_instances(id, finished);
            }
        }
        self.set_use_results(&mut ctx, step, result);
        ctx
    }

    /// `steps.<step>` for every recipe use, seen from `step` (the same
    /// rules as for a step: same sandbox, one instance, or `instances`).
    fn set_use_results<'r>(
        &self,
        ctx: &mut Context,
        step: usize,
        result: impl Fn(usize) -> Option<&'r StepResult>,
    ) {
        let result = &result;
        let me = &self.steps[step];
        for u in &self.uses {
            let Some(first_local) = u.local_ids.first() else {
                continue;
            };
            let range = self.instances_of(&u.expanded_id(first_local));
            let Some(first) = range.clone().next() else {
                continue;
            };
            let same = self.sandboxes[self.steps[first].sandbox].sandbox
                == self.sandboxes[me.sandbox].sandbox;
            if same || range.len() == 1 {
                let sb = if same {
                    me.sandbox
                } else {
                    self.steps[first].sandbox
                };
                if let Some(r) = self.use_result(u, sb, result) {
                    ctx.set_step(&u.step, &r);
                }
            } else {
                let finished: Vec<(usize, StepResult)> = range
                    .filter_map(|i| Some((i, self.use_result(u, self.steps[i].sandbox, result)?)))
                    .collect();
                ctx.set_instances(
                    &u.step,
                    finished.iter().map(|(i, r)| InstanceResult {
                        sandbox: &self.sandboxes[self.steps[*i].sandbox].id,
                        matrix: &self.steps[*i].matrix,
                        result: r,
                    }),
                );
            }
        }
    }
}
