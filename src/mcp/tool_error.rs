//! A tool that ran and failed: a message and the next step, returned to
//! the model as the tool's result (`isError`), not as a protocol error,
//! so that it reads why and can try again.

use std::fmt;

/// Why a tool call did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What went wrong.
    pub message: String,
    /// What to do next, when something helps.
    pub hint: Option<String>,
}

impl ToolError {
    /// `message`, with `hint` as the next step.
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// Arguments that do not fit the tool's input schema.
    pub fn arguments(tool: &str, e: &serde_json::Error) -> ToolError {
        ToolError::new(
            format!("bad arguments for `{tool}`: {e}"),
            "the tool's input schema (tools/list) names every argument and its type",
        )
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message.trim_end())?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl From<crate::error::Error> for ToolError {
    fn from(e: crate::error::Error) -> ToolError {
        // The library's errors carry their own hints.
        ToolError {
            message: e.to_string(),
            hint: None,
        }
    }
}
