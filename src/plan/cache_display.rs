//! The cache plan as `plan` shows it: text and JSON.

use std::fmt::Write;

use serde_json::{json, Value};

use super::{Plan, StepCache};

/// `cache: N cached, M refused` then one line per refused step; nothing
/// when no step asked for the cache.
#[must_use]
pub fn cache_text(plan: &Plan, cache: &[StepCache]) -> String {
    let cached = cache.iter().filter(|c| c.is_cached()).count();
    let refused: Vec<(usize, &StepCache)> = cache
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, StepCache::Refused(_)))
        .collect();
    if cached == 0 && refused.is_empty() {
        return String::new();
    }
    let mut s = format!("cache: {cached} cached, {} not cacheable\n", refused.len());
    for (i, c) in refused {
        if let StepCache::Refused(r) = c {
            let _ = writeln!(s, "  {} is not cached: {r}", plan.steps[i].id);
        }
    }
    s
}

/// `{ "<step id>": { "cache": "off"|"cached"|"refused", "reason": … } }`.
#[must_use]
pub fn cache_json(plan: &Plan, cache: &[StepCache]) -> Value {
    let mut m = serde_json::Map::new();
    for (i, c) in cache.iter().enumerate() {
        let v = match c {
            StepCache::Off => json!({ "cache": "off" }),
            StepCache::Cached => json!({ "cache": "cached" }),
            StepCache::Refused(r) => json!({ "cache": "refused", "reason": r.to_string() }),
        };
        m.insert(plan.steps[i].id.clone(), v);
    }
    Value::Object(m)
}
