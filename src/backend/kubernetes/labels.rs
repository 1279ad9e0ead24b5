//! Engine labels as pod labels: Kubernetes allows fewer characters and 63
//! of them in a value, so values are made to fit and the originals are
//! kept, exactly, in one annotation.

use std::collections::BTreeMap;

/// The annotation holding the original labels as JSON.
pub(super) const ORIGINAL: &str = "pocketdock.io/labels";

/// The longest label value (and name segment) Kubernetes accepts.
const MAX: usize = 63;

/// `value` as a valid label value: invalid characters become `-`, at most
/// 63 characters, starting and ending with a letter or digit.
pub(super) fn value(value: &str) -> String {
    let mapped: String = value
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(MAX)
        .collect();
    mapped
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// `key` as a valid label key (`[prefix/]name`, the name sanitized like a
/// value; an empty result becomes `x`).
pub(super) fn key(key: &str) -> String {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name = value(name);
    let name = if name.is_empty() { "x".into() } else { name };
    match prefix.map(|p| value(&p.to_ascii_lowercase())) {
        Some(p) if !p.is_empty() => format!("{p}/{name}"),
        _ => name,
    }
}

/// Pod labels and the annotation keeping the originals.
pub(super) fn to_pod(labels: &BTreeMap<String, String>) -> (BTreeMap<String, String>, String) {
    let fitted = labels.iter().map(|(k, v)| (key(k), value(v))).collect();
    let original = serde_json::to_string(labels).unwrap_or_default();
    (fitted, original)
}

/// The original labels of a pod: from the annotation, else its labels.
pub(super) fn from_pod(
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    annotations
        .and_then(|a| a.get(ORIGINAL))
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_else(|| labels.cloned().unwrap_or_default())
}

/// A label selector for engine-style filters (`key` or `key=value`), and
/// the filters themselves to check on the originals (a fitted value may
/// stand for more than one original).
pub(super) fn selector(filters: &[String]) -> String {
    filters
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k, v)) => format!("{}={}", key(k), value(v)),
            None => key(f),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `labels` (originals) carry every filter.
pub(super) fn matches(labels: &BTreeMap<String, String>, filters: &[String]) -> bool {
    filters.iter().all(|f| match f.split_once('=') {
        Some((k, v)) => labels.get(k).is_some_and(|have| have == v),
        None => labels.contains_key(f),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fitted_to_label_syntax() {
        assert_eq!(value("true"), "true");
        assert_eq!(value("/home/me/job.yaml"), "home-me-job.yaml");
        assert_eq!(value(&"a".repeat(80)).len(), 63);
        assert_eq!(value("--"), "");
    }

    #[test]
    fn keys_keep_a_prefix() {
        assert_eq!(key("pocketdock.managed"), "pocketdock.managed");
        assert_eq!(key("Example.COM/a b"), "example.com/a-b");
        assert_eq!(key("!!"), "x");
    }

    #[test]
    fn originals_survive_the_round_trip() {
        let labels = BTreeMap::from([("pocketdock.job".to_string(), "a b/c".to_string())]);
        let (fitted, original) = to_pod(&labels);
        assert_eq!(fitted["pocketdock.job"], "a-b-c");
        let annotations = BTreeMap::from([(ORIGINAL.to_string(), original)]);
        assert_eq!(from_pod(Some(&fitted), Some(&annotations)), labels);
        assert!(matches(&labels, &["pocketdock.job=a b/c".into()]));
        assert!(!matches(&labels, &["pocketdock.job=a-b-c".into()]));
        assert_eq!(
            selector(&["pocketdock.job=a b/c".into(), "k".into()]),
            "pocketdock.job=a-b-c,k"
        );
    }
}
