//! `POST /v1/jobs` with `wait: true`: the answer comes when the job ends,
//! or, after `timeout` seconds, with its status then. The job runs on a
//! task of its own: a client that gives up, or a wait that times out,
//! leaves it running.

use std::time::Duration;

use serde_json::Value;

use super::api_error::ApiError;
use super::files::Growth;
use super::state::Shared;

/// Seconds a wait lasts when `timeout` is not given.
pub const DEFAULT_TIMEOUT: u64 = 300;
/// The longest wait.
pub const MAX_TIMEOUT: u64 = 3600;

/// How long to wait, from the body's `wait` and `timeout`; `None` for no
/// wait.
pub fn timeout(wait: bool, timeout: Option<&Value>) -> Result<Option<Duration>, ApiError> {
    let secs = match timeout {
        None => DEFAULT_TIMEOUT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=MAX_TIMEOUT).contains(&n) => n,
            _ => {
                return Err(ApiError::bad(
                    format!("`timeout` {v} is out of range: it is a whole number of seconds from 1 to {MAX_TIMEOUT}"),
                    &format!("leave it out to wait {DEFAULT_TIMEOUT} s; a job may run longer than a wait: on timeout the answer is 202 with its status, and `GET /v1/jobs/{{id}}` follows it"),
                ))
            }
        },
    };
    if !wait {
        return match timeout {
            None => Ok(None),
            Some(_) => Err(ApiError::bad(
                "`timeout` is for a wait, and `wait` is not true",
                "add `\"wait\": true`, or leave `timeout` out",
            )),
        };
    }
    Ok(Some(Duration::from_secs(secs)))
}

/// Wait up to `timeout` for job `id` to end (or the server to stop);
/// whether it ended.
pub async fn until_ended(state: &Shared, id: &str, timeout: Duration) -> bool {
    let ended = || {
        state
            .store
            .job_by_id(id)
            .is_none_or(|j| !j.shown_status().is_running())
    };
    let mut growth = Growth::of(state, id);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    loop {
        if ended() {
            return true;
        }
        if state.stop.is_cancelled() {
            return false;
        }
        tokio::select! {
            () = growth.wait(state) => {}
            () = &mut deadline => return ended(),
        }
    }
}
