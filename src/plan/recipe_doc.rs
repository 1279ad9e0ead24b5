//! Recipes described for people and machines: `pocketdock recipe show`
//! (text or JSON) and the reference part of docs/recipes.md, all from the
//! recipe files themselves, so the docs cannot drift from what ships.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::recipe_set::{FoundRecipe, RecipeOrigin, SHIPPED_RECIPES};
use crate::manifest::{self, Format, InputDecl};

/// A recipe as JSON: name, origin, description, profile, inputs, outputs, steps.
#[must_use]
pub fn recipe_json(r: &FoundRecipe) -> Value {
    let d = &r.decl;
    json!({
        "name": r.name,
        "origin": origin_text(&r.origin),
        "description": d.description,
        "profile": d.profile.as_ref().map(|p| p.value.clone()),
        "inputs": d.inputs.values().map(|i| json!({
            "name": i.name,
            "type": i.ty.name(),
            "required": i.required,
            "default": i.default,
            "description": i.description,
        })).collect::<Vec<_>>(),
        "outputs": d.outputs.values().map(|o| json!({
            "name": o.name,
            "description": o.description,
        })).collect::<Vec<_>>(),
        "steps": d.steps.keys().collect::<Vec<_>>(),
    })
}

/// `shipped`, or the recipe's directory.
#[must_use]
pub fn origin_text(o: &RecipeOrigin) -> String {
    match o {
        RecipeOrigin::Shipped => "shipped".into(),
        RecipeOrigin::Dir(d) => d.display().to_string(),
    }
}

fn default_text(i: &InputDecl) -> String {
    if i.required {
        return "required".into();
    }
    match &i.default {
        None | Some(Value::Null) => "none".into(),
        Some(Value::String(s)) if s.is_empty() => "`\"\"`".into(),
        Some(Value::String(s)) => format!("`{s}`"),
        Some(v) => format!("`{v}`"),
    }
}

/// A recipe as Markdown: a heading, what it does, its inputs and outputs.
#[must_use]
pub fn recipe_markdown(r: &FoundRecipe, level: &str) -> String {
    let d = &r.decl;
    let mut s = format!("{level} `{}`\n\n", r.name);
    if let Some(desc) = &d.description {
        let _ = writeln!(s, "{desc}.\n");
    }
    if let Some(p) = &d.profile {
        let _ = writeln!(s, "Needs a sandbox of profile `{}`.\n", p.value);
    }
    let steps: Vec<String> = d.steps.keys().map(|k| format!("`{k}`")).collect();
    let _ = writeln!(s, "Steps: {}.\n", steps.join(", "));
    if !d.inputs.is_empty() {
        s.push_str("| input | type | default | description |\n| --- | --- | --- | --- |\n");
        for i in d.inputs.values() {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} |",
                i.name,
                i.ty.name(),
                default_text(i),
                cell(i.description.as_deref().unwrap_or(""))
            );
        }
        s.push('\n');
    }
    if !d.outputs.is_empty() {
        s.push_str("| output | description |\n| --- | --- |\n");
        for o in d.outputs.values() {
            let _ = writeln!(
                s,
                "| `{}` | {} |",
                o.name,
                cell(o.description.as_deref().unwrap_or(""))
            );
        }
        s.push('\n');
    }
    s
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The reference of every shipped recipe, sorted by name, for docs/recipes.md.
#[must_use]
pub fn shipped_reference() -> String {
    let mut names: Vec<&(&str, &str)> = SHIPPED_RECIPES.iter().collect();
    names.sort_by_key(|(n, _)| *n);
    let mut out = String::new();
    for (name, text) in names {
        let path = std::path::PathBuf::from(format!("recipes/{name}/recipe.yaml"));
        match manifest::parse_recipe(&path, text, Format::Yaml) {
            Ok(decl) => {
                let found = FoundRecipe {
                    name: (*name).to_string(),
                    origin: RecipeOrigin::Shipped,
                    decl: std::sync::Arc::new(decl),
                };
                out.push_str(&recipe_markdown(&found, "###"));
            }
            Err(e) => {
                let _ = writeln!(out, "### `{name}`\n\n(does not decode: {e})\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "<!-- recipes -->\n";
    const END: &str = "<!-- /recipes -->";

    #[test]
    fn every_shipped_recipe_decodes() {
        for (name, text) in SHIPPED_RECIPES {
            let path = std::path::PathBuf::from(format!("recipes/{name}/recipe.yaml"));
            if let Err(e) = manifest::parse_recipe(&path, text, Format::Yaml) {
                panic!("{name}: {e}");
            }
        }
    }

    /// docs/recipes.md shows what the recipe files say;
    /// `POCKETDOCK_BLESS=1 cargo test --lib recipe_doc` rewrites it.
    #[test]
    fn docs_recipes_md_is_up_to_date() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/recipes.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let start = doc
            .find(START)
            .expect("docs/recipes.md has no recipes marker")
            + START.len();
        let end = doc.find(END).expect("docs/recipes.md has no end marker");
        let want = shipped_reference();
        if doc[start..end] != want {
            if std::env::var_os("POCKETDOCK_BLESS").is_some() {
                let new = format!("{}{want}{}", &doc[..start], &doc[end..]);
                std::fs::write(&path, new).unwrap();
            } else {
                panic!("docs/recipes.md is out of date: POCKETDOCK_BLESS=1 cargo test --lib recipe_doc");
            }
        }
    }
}
