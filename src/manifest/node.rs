//! The marked tree both syntaxes parse into: YAML and KDL become the same
//! `Node`s, so one decoder (and one set of error messages) serves both.

use crate::diag::Span;

/// A value with the span of its text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub span: Span,
}

/// A map key with the span of its text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Keys in file order; the parsers reject duplicates.
    Map(Vec<(Key, Node)>),
}

impl Node {
    pub fn new(kind: NodeKind, span: Span) -> Node {
        Node { kind, span }
    }

    /// What this node is, for "expected X, found Y" messages.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Null => "nothing",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Int(_) => "an integer",
            NodeKind::Float(_) => "a number",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a map",
        }
    }

    /// The node as plain data, for `vars` and matrix values.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            NodeKind::Null => Value::Null,
            NodeKind::Bool(b) => Value::Bool(*b),
            NodeKind::Int(i) => Value::from(*i),
            NodeKind::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            NodeKind::Str(s) => Value::String(s.clone()),
            NodeKind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeKind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}
