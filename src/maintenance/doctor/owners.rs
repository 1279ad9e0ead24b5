//! Sandboxes whose owner process ended without removing them: a library
//! program that was killed, a server that crashed. Job containers are the
//! job checks' business (their record tells more), so they are left out.

use super::Finding;
use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::manage::{orphaned, Scope};
use crate::project::Project;

/// Every abandoned sandbox of `project` or of no project; with `fix`,
/// removed.
pub(super) async fn check(
    backend: &Backend,
    project: &Project,
    fix: bool,
) -> Result<Vec<Finding>, Error> {
    let mut findings = Vec::new();
    for s in orphaned(backend, &Scope::Project(project.name.clone())).await? {
        if s.job.is_some() {
            continue;
        }
        let mut errors = Vec::new();
        let fixed = fix
            && match backend.remove_container(&s.id, true).await {
                Ok(()) => true,
                Err(e) => {
                    errors.push(format!("remove {}: {e}", s.name));
                    false
                }
            };
        findings.push(Finding::Orphaned {
            container: s.name,
            owner_pid: s.owner_pid.unwrap_or(0),
            state: s.state,
            fixed,
            errors,
        });
    }
    Ok(findings)
}
