//! A recipe: steps written in the manifest language, with declared inputs
//! and outputs, that a step runs on its own sandbox with `uses:`.
//!
//! Its steps are ordinary [`StepDecl`]s whose `sandbox` is the placeholder
//! [`RECIPE_SANDBOX`]; the plan puts each on the using step's sandbox. The
//! recipe keeps its own [`Source`], so a mistake inside it points at the
//! recipe's file, not at the manifest that uses it.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use super::sandbox_decl::Tpl;
use super::step_decl::StepDecl;
use crate::diag::{Source, Span};

/// The sandbox id recipe steps carry until the plan gives them the caller's.
pub const RECIPE_SANDBOX: &str = "<caller>";

/// A decoded recipe file.
#[derive(Debug, Clone)]
pub struct RecipeDecl {
    /// The recipe file, for diagnostics about its own text.
    pub source: Arc<Source>,
    /// One line for listings.
    pub description: Option<String>,
    /// The profile the caller's sandbox must have.
    pub profile: Option<Tpl>,
    /// Inputs by name, in file order.
    pub inputs: IndexMap<String, InputDecl>,
    /// Outputs by name, in file order.
    pub outputs: IndexMap<String, OutputDecl>,
    /// Steps in file order (sandbox [`RECIPE_SANDBOX`]).
    pub steps: IndexMap<String, StepDecl>,
}

/// One declared input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputDecl {
    /// Its name (`inputs.<name>` in the recipe's templates).
    pub name: String,
    /// Where the name is written in the recipe.
    pub span: Span,
    /// What values it takes.
    pub ty: InputType,
    /// Value when the caller gives none.
    pub default: Option<Value>,
    /// The caller must give it.
    pub required: bool,
    /// What it means.
    pub description: Option<String>,
}

/// One declared output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputDecl {
    /// Its name (`steps.<step>.outputs.<name>` for the caller).
    pub name: String,
    /// A template over the recipe's context, rendered when its steps end.
    pub value: Tpl,
    /// What it means.
    pub description: Option<String>,
}

/// The type of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputType {
    /// Text (numbers and booleans are taken as their text).
    String,
    /// Any number.
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A list.
    List,
    /// A map.
    Map,
}

impl InputType {
    /// Every type, in the order docs list them.
    pub const ALL: [InputType; 6] = [
        InputType::String,
        InputType::Number,
        InputType::Integer,
        InputType::Boolean,
        InputType::List,
        InputType::Map,
    ];

    /// The name written after `type:`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            InputType::String => "string",
            InputType::Number => "number",
            InputType::Integer => "integer",
            InputType::Boolean => "boolean",
            InputType::List => "list",
            InputType::Map => "map",
        }
    }

    /// The type a name means.
    #[must_use]
    pub fn from_name(name: &str) -> Option<InputType> {
        InputType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// "a string", "a list", ... for messages.
    #[must_use]
    pub fn article(self) -> &'static str {
        match self {
            InputType::String => "a string",
            InputType::Number => "a number",
            InputType::Integer => "an integer",
            InputType::Boolean => "a boolean",
            InputType::List => "a list",
            InputType::Map => "a map",
        }
    }

    /// Whether a literal value fits (null fits any: "not given").
    #[must_use]
    pub fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (InputType::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (_, Value::Null)
            | (InputType::String, Value::String(_) | Value::Number(_) | Value::Bool(_))
            | (InputType::Number, Value::Number(_))
            | (InputType::Boolean, Value::Bool(_))
            | (InputType::List, Value::Array(_))
            | (InputType::Map, Value::Object(_)) => true,
            _ => false,
        }
    }
}
