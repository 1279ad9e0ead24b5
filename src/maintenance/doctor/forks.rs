//! Fork images no container uses: their last copy went some way other than
//! `shutdown` (removed by hand, or by another tool). They hold disk and
//! nothing reads them.

use super::Finding;
use crate::backend::Backend;
use crate::error::Error;
use crate::fleet::manage::unused_fork_images;
use crate::labels;
use crate::project::Project;

/// Every fork image of a sandbox of `project` that no container uses;
/// with `fix`, removed.
pub(super) async fn check(
    backend: &Backend,
    project: &Project,
    fix: bool,
) -> Result<Vec<Finding>, Error> {
    let mut findings = Vec::new();
    for image in unused_fork_images(backend, &[]).await? {
        // A commit keeps the container's labels: the original's project.
        if image.labels.get(labels::PROJECT) != Some(&project.name) {
            continue;
        }
        let mut errors = Vec::new();
        let fixed = fix
            && match backend.remove_image(&image.id, false).await {
                Ok(_) => true,
                Err(e) => {
                    errors.push(format!("remove image {}: {e}", image.id));
                    false
                }
            };
        findings.push(Finding::ForkOrphan {
            image: image.id.clone(),
            of: image
                .labels
                .get(labels::FORK_OF)
                .cloned()
                .unwrap_or_default(),
            size: image.size,
            fixed,
            errors,
        });
    }
    Ok(findings)
}
