//! Volume endpoints: remove (jobs create the named volumes they mount).

use hyper::Method;

use super::transport::{check, encode};
use super::Engine;
use crate::error::Result;

impl Engine {
    /// Remove the named volume (`force`: even while a container uses it);
    /// `false` when there was none.
    pub async fn remove_volume(&self, name: &str, force: bool) -> Result<bool> {
        let resp = self
            .transport()
            .send(
                "remove volume",
                Method::DELETE,
                &format!("/volumes/{}?force={force}", encode(name)),
                None,
                &[],
            )
            .await?;
        if resp.status() == hyper::StatusCode::NOT_FOUND {
            return Ok(false);
        }
        check("remove volume", resp).await.map(|_| true)
    }
}
