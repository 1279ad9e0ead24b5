//! Diagnostics: source text with byte spans, positions as line and
//! character column, a rendered error with a hint, and did-you-mean.
//!
//! A leaf: manifests, settings files and recipes all report through it, and
//! [`crate::Error`] carries a [`ManifestError`] without knowing any parser.

mod diagnostic;
mod source;
pub mod suggest;

pub use diagnostic::{Diagnostic, ManifestError};
pub use source::{Source, Span, Spanned};
pub use suggest::did_you_mean;
