//! Templates: every string value of a manifest is a minijinja template.
//!
//! This is the one home of templates, between the leaves and the
//! manifest: the engine with its limits and fuel (`engine.rs`, errors in
//! [`TemplateError`], moved into the file by [`locate()`]), what a template
//! can read ([`Context`], and the contexts the plan, recipes and the runner
//! render with, built in `scope.rs`), what templates see of a finished step
//! ([`StepResult`] and its one [`ResultStatus`]), and the checks planning
//! and `validate` run before anything renders: the variables a template
//! reads (`references.rs`) and the filters and tests it calls (`calls.rs`).
//!
//! The manifest keeps templates as text ([`Tpl`]); the plan renders the
//! sandboxes' and checks the steps'; the runner renders each step just
//! before it runs, with the results of finished steps in the context.

mod arity;
mod calls;
mod chains;
mod context;
mod engine;
mod error;
mod locate;
mod loops;
mod references;
mod scope;
mod step_result;
mod tags;

pub use context::Context;
pub(crate) use engine::single_expression;
pub use engine::{eval_bool_str, is_template, render_str, render_value_str};
pub use error::TemplateError;
pub use locate::{eval_bool, locate, render, render_value, Tpl};
pub use scope::InstanceResult;
pub use step_result::{PythonResult, ResultStatus, StepResult};

pub(crate) use calls::check_calls;
pub(crate) use references::{path_text, references, Reference, Syntax};

#[cfg(test)]
mod tests;
