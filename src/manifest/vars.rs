//! Variable overrides: `--vars-file FILE` (YAML or JSON), then `--var KEY=VALUE`.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value;

use super::input;
use super::limits::{Limit, Limits};
use super::node::NodeKind;
use super::yaml;
use crate::diag::Source;
use crate::diag::{Diagnostic, ManifestError};

/// Split a `--var` argument into key and value.
pub fn parse_var_arg(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!(
            "invalid --var `{arg}`: expected KEY=VALUE, e.g. --var students='[alice, bob]'"
        )),
    }
}

/// The value of `--var KEY=VALUE`: numbers and booleans keep their type,
/// `[…]` and `{…}` are YAML flow collections, everything else is a string.
#[must_use]
pub fn parse_var_value(raw: &str) -> Value {
    let t = raw.trim();
    if t == "true" || t == "false" {
        return Value::Bool(t == "true");
    }
    if let Ok(i) = t.parse::<i64>() {
        return Value::from(i);
    }
    if t.contains('.') {
        if let Ok(f) = t.parse::<f64>() {
            if let Some(n) = serde_json::Number::from_f64(f) {
                return Value::Number(n);
            }
        }
    }
    if (t.starts_with('[') && t.ends_with(']')) || (t.starts_with('{') && t.ends_with('}')) {
        if let Ok(node) = yaml::parse(&Source::new("--var", t), &Limits::default()) {
            return node.to_json();
        }
    }
    Value::String(raw.to_string())
}

/// Read a vars file: a YAML or JSON map.
pub fn read_vars_file(path: &Path) -> Result<IndexMap<String, Value>, ManifestError> {
    let limits = Limits::default();
    let text = input::read_capped(path, limits.get(Limit::FileSize))?;
    let source = Source::new(path, input::strip_bom(&text));
    input::check_nul(&source)?;
    let node = yaml::parse(&source, &limits).map_err(ManifestError::Invalid)?;
    match &node.kind {
        NodeKind::Map(entries) => Ok(entries
            .iter()
            .map(|(k, v)| (k.name.clone(), v.to_json()))
            .collect()),
        _ => Err(Diagnostic::new(
            &source,
            node.span,
            format!(
                "a vars file must be a map of name to value, found {}",
                node.type_name()
            ),
        )
        .hint("write `name: value` lines (YAML) or a JSON object")
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn var_values_keep_simple_types() {
        assert_eq!(parse_var_value("3"), json!(3));
        assert_eq!(parse_var_value("1.5"), json!(1.5));
        assert_eq!(parse_var_value("true"), json!(true));
        assert_eq!(parse_var_value("[alice, bob]"), json!(["alice", "bob"]));
        assert_eq!(parse_var_value("{a: 1}"), json!({"a": 1}));
        assert_eq!(parse_var_value("a: b"), json!("a: b"));
        assert_eq!(parse_var_value("no"), json!("no"));
        assert_eq!(parse_var_value("[oops"), json!("[oops"));
        assert_eq!(parse_var_value(""), json!(""));
    }

    #[test]
    fn var_args_need_a_key() {
        assert_eq!(parse_var_arg("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert!(parse_var_arg("=x").is_err());
        assert!(parse_var_arg("x").is_err());
    }

    #[test]
    fn vars_files_are_yaml_or_json_maps() {
        let dir = tempfile::tempdir().unwrap();
        let y = dir.path().join("v.yaml");
        std::fs::write(&y, "students: [a, b]\nn: 2\n").unwrap();
        assert_eq!(read_vars_file(&y).unwrap()["students"], json!(["a", "b"]));
        let j = dir.path().join("v.json");
        std::fs::write(&j, "{\"students\": [\"c\"], \"x\": null}").unwrap();
        assert_eq!(read_vars_file(&j).unwrap()["students"], json!(["c"]));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "[1, 2]").unwrap();
        let e = read_vars_file(&bad).unwrap_err();
        assert!(e.to_string().contains("must be a map"), "{e}");
        assert!(matches!(
            read_vars_file(&dir.path().join("missing")),
            Err(ManifestError::Read { .. })
        ));
    }
}
