//! The JSON Schema of the YAML manifest, generated from the key table the
//! decoder uses, so the schema cannot promise a key the decoder rejects.
//!
//! `schemas/pocketdock.schema.json` is checked in for editors; a test fails
//! when it differs from [`json_schema`]. Regenerate it with
//! `POCKETDOCK_BLESS=1 cargo test --lib schema`.

use serde_json::{json, Map, Value};

use super::keys::{
    KeyDoc, CACHE_FILE_KEYS, CONTAINERS_KEYS, LOGGING_KEYS, MANIFEST_KEYS, PROJECT_KEYS, REQUIRED,
    SANDBOX_KEYS, STEP_KEYS, STEP_LIMIT_KEYS,
};
use crate::steps::Kind;

/// Where the checked-in schema lives, relative to the crate root.
pub const SCHEMA_PATH: &str = "schemas/pocketdock.schema.json";

fn object(description: &str, keys: &[KeyDoc], required_of: &str) -> Value {
    let required = REQUIRED
        .iter()
        .find(|(name, _)| *name == required_of)
        .map_or(&[][..], |(_, req)| req);
    object_requiring(description, keys, required)
}

fn object_requiring(description: &str, keys: &[KeyDoc], required: &[&str]) -> Value {
    let mut props = Map::new();
    for k in keys {
        let mut schema = (k.schema)();
        if let Value::Object(o) = &mut schema {
            o.insert("description".into(), Value::String(k.doc.into()));
        }
        props.insert(k.name.into(), schema);
    }
    let mut obj = json!({
        "type": "object",
        "description": description,
        "additionalProperties": false,
        "properties": props,
    });
    if !required.is_empty() {
        obj["required"] = json!(required);
    }
    obj
}

/// The schema, as a JSON value (draft 2020-12).
#[must_use]
pub fn json_schema() -> Value {
    let mut root = object(
        "A pocketdock manifest: sandboxes (containers) and the steps that run in them. See docs/manifest.md.",
        MANIFEST_KEYS,
        "manifest",
    );
    let mut step = object(
        "One step: exactly one action (`run`, `push`, `pull`, `snapshot`, `session` or `python`), or `uses` a recipe with `with` values, on one sandbox.",
        &STEP_KEYS,
        "step",
    );
    step["oneOf"] = json!(Kind::ALL
        .iter()
        .map(|k| json!({ "required": [k.name()] }))
        .collect::<Vec<_>>());
    step["dependentRequired"] = json!({ "with": ["uses"] });
    let mut sandbox = object(
        "One sandbox (container), or one per matrix combination.",
        SANDBOX_KEYS,
        "sandbox",
    );
    sandbox["not"] = json!({ "required": ["profile", "image"] });
    let mut defs = json!({
        "sandbox": sandbox,
        "step": step,
        "cache_file": object("A host file whose content counts in a step's cache key.", CACHE_FILE_KEYS, "cache_file"),
        "step_limits": object("What a `run` step's command may use.", STEP_LIMIT_KEYS, "step_limits"),
        "project": object("Project settings.", PROJECT_KEYS, "project"),
        "logging": object("Logs of persistent sandboxes.", LOGGING_KEYS, "logging"),
        "containers": object("Idle sandboxes.", CONTAINERS_KEYS, "containers"),
    });
    for form in Kind::ALL.iter().flat_map(|k| k.forms()) {
        defs[form.def] = object_requiring(form.description, form.keys, form.required);
    }
    let Value::Object(obj) = &mut root else {
        unreachable!()
    };
    let mut out = Map::new();
    out.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    out.insert(
        "$id".into(),
        json!("https://pocketdock.invalid/schemas/pocketdock.schema.json"),
    );
    out.insert("title".into(), json!("pocketdock manifest"));
    out.extend(std::mem::take(obj));
    out.insert("$defs".into(), defs);
    Value::Object(out)
}

/// The schema as the checked-in file's text.
#[must_use]
pub fn json_schema_text() -> String {
    let mut s = json_schema().to_string();
    if let Ok(pretty) = serde_json::to_string_pretty(&json_schema()) {
        s = pretty;
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::keys::INSTALL_KEYS;

    #[test]
    fn schema_file_is_up_to_date() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SCHEMA_PATH);
        let want = json_schema_text();
        if std::env::var_os("POCKETDOCK_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{SCHEMA_PATH} is out of date with the manifest model; regenerate it with:\n  \
             POCKETDOCK_BLESS=1 cargo test --lib schema"
        );
    }

    #[test]
    fn the_reference_documents_every_key() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/manifest.md"),
        )
        .unwrap();
        let forms = Kind::ALL.iter().flat_map(|k| k.forms()).map(|f| f.keys);
        let tables = [
            MANIFEST_KEYS,
            SANDBOX_KEYS,
            &STEP_KEYS,
            STEP_LIMIT_KEYS,
            PROJECT_KEYS,
            LOGGING_KEYS,
            CONTAINERS_KEYS,
            INSTALL_KEYS,
        ];
        for table in tables.into_iter().chain(forms) {
            for key in table {
                assert!(
                    doc.contains(&format!("`{}`", key.name)),
                    "docs/manifest.md does not mention `{}`",
                    key.name
                );
            }
        }
    }

    #[test]
    fn every_key_has_a_description() {
        fn walk(v: &Value, path: &str) {
            if let Some(props) = v.get("properties").and_then(Value::as_object) {
                for (k, p) in props {
                    let d = p.get("description").and_then(Value::as_str).unwrap_or("");
                    assert!(!d.is_empty(), "{path}.{k} has no description");
                }
            }
        }
        let s = json_schema();
        walk(&s, "manifest");
        for (name, def) in s["$defs"].as_object().unwrap() {
            walk(def, name);
        }
    }
}
