//! The cache part of `pocketdock plan`: a line per step that asks for the
//! cache (cached, reruns and why, or why it cannot be cached), or a
//! `cache` map in JSON.

use std::fmt::Write;

use serde_json::{json, Value};

use crate::job::CachePreview;
use crate::plan::Plan;

/// `cache: …` then one line per step that asks for the cache; nothing
/// when none does.
pub(super) fn text(plan: &Plan, shown: &[CachePreview]) -> String {
    let count = |f: fn(&CachePreview) -> bool| shown.iter().filter(|p| f(p)).count();
    let cacheable = count(|p| matches!(p, CachePreview::Cacheable));
    let cached = count(|p| matches!(p, CachePreview::Cached));
    let rerun = count(|p| matches!(p, CachePreview::Rerun(_)));
    let refused = count(|p| matches!(p, CachePreview::Refused(_)));
    if cacheable + cached + rerun + refused == 0 {
        return String::new();
    }
    let mut s = if cacheable > 0 {
        format!("cache: {cacheable} cacheable, {refused} not cacheable\n")
    } else {
        format!("cache: {cached} cached, {rerun} rerun, {refused} not cacheable\n")
    };
    for (i, p) in shown.iter().enumerate() {
        let id = &plan.steps[i].id;
        let _ = match p {
            CachePreview::Off | CachePreview::Cacheable => Ok(()),
            CachePreview::Cached => writeln!(s, "  {id} is cached"),
            CachePreview::Rerun(why) => writeln!(s, "  {id} reruns: {why}"),
            CachePreview::Refused(why) => writeln!(s, "  {id} is not cached: {why}"),
        };
    }
    s
}

/// `{ "<step id>": { "cache": "off"|"cacheable"|"cached"|"rerun"|"refused", "reason": … } }`.
pub(super) fn json(plan: &Plan, shown: &[CachePreview]) -> Value {
    let mut m = serde_json::Map::new();
    for (i, p) in shown.iter().enumerate() {
        let v = match p {
            CachePreview::Off => json!({ "cache": "off" }),
            CachePreview::Cacheable => json!({ "cache": "cacheable" }),
            CachePreview::Cached => json!({ "cache": "cached" }),
            CachePreview::Rerun(r) => json!({ "cache": "rerun", "reason": r }),
            CachePreview::Refused(r) => json!({ "cache": "refused", "reason": r }),
        };
        m.insert(plan.steps[i].id.clone(), v);
    }
    Value::Object(m)
}
