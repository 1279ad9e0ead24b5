//! The registry holds every kind whole: a kind added to it is decoded,
//! listed in the step's keys and the schema, and named one way.

use std::collections::HashSet;
use std::path::Path;

use super::Kind;
use crate::manifest::keys::STEP_KEYS;
use crate::manifest::schema::json_schema;
use crate::manifest::{parse, Format, LoadOptions};

fn manifest_with(body: &str) -> String {
    format!("version: 1\nsandboxes:\n  box: {{}}\nsteps:\n  s:\n    {body}\n")
}

#[test]
fn every_kind_decodes_from_its_example() {
    for &kind in Kind::ALL {
        let text = manifest_with(kind.example());
        let m = parse(
            Path::new("job.yaml"),
            &text,
            Format::Yaml,
            &LoadOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        assert_eq!(m.steps["s"].action.which(), kind);
        assert_eq!(m.steps["s"].action.kind(), kind.name());
    }
}

#[test]
fn every_kind_has_one_name_its_key_and_its_schema_entry() {
    let mut seen = HashSet::new();
    let schema = json_schema();
    let one_of = schema["$defs"]["step"]["oneOf"].to_string();
    for &kind in Kind::ALL {
        let name = kind.name();
        assert!(seen.insert(name), "two kinds are named `{name}`");
        assert_eq!(Kind::from_name(name), Some(kind));
        assert_eq!(kind.key().name, name, "the key of `{name}`");
        assert!(
            STEP_KEYS.iter().any(|k| k.name == name),
            "`{name}` is no step key"
        );
        assert!(
            one_of.contains(&format!("\"{name}\"")),
            "the schema lacks `{name}`"
        );
        for form in kind.forms() {
            assert!(
                schema["$defs"].get(form.def).is_some(),
                "no `$defs.{}`",
                form.def
            );
        }
    }
}
