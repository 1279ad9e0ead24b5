//! The query parameters the paged lists share: `limit` (a page's size)
//! and the event id `since`, each checked with a 400 that says what fits.

use super::api_error::ApiError;

/// `limit`: `default` when absent, else a whole number from 1 to `max`.
pub fn limit(raw: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    let Some(raw) = raw else { return Ok(default) };
    match raw.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::bad(
            format!("`limit` `{raw}` is out of range: it is a whole number from 1 to {max}"),
            &format!("leave it out for {default} at a time, or give at most {max} and page on"),
        )),
    }
}

/// `since`: an event id (a line number of the history), 0 when absent.
pub fn since(raw: Option<&str>) -> Result<u64, ApiError> {
    let Some(raw) = raw else { return Ok(0) };
    raw.trim().parse::<u64>().map_err(|_| {
        ApiError::bad(
            format!("`since` `{raw}` is not an event id"),
            "give the id of the last event seen (a whole number, 0 for all), \
             such as the last list's `next_since`",
        )
    })
}
