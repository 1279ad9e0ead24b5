//! `steps.<id>.limits`: what a `run` step's command may use, each limit in
//! the language's own forms (a duration as `timeout` is, sizes as `mem`).

use super::{Decoder, Node, Span};
use crate::manifest::keys::STEP_LIMIT_KEYS;
use crate::manifest::step_decl::StepLimits;
use crate::size::{ByteSize, SIZE_FORMS};

impl Decoder<'_> {
    /// The `limits` map of `what`.
    pub(super) fn step_limits(&mut self, node: &Node, what: &str) -> Option<StepLimits> {
        let obj = self.obj(
            node,
            &format!("`limits` of {what}"),
            "limits",
            STEP_LIMIT_KEYS,
            &[],
        )?;
        Some(StepLimits {
            cpu_time: obj
                .value("cpu_time")
                .and_then(|n| self.duration(n, "cpu_time"))
                .map(|d| d.value),
            memory: obj
                .value("memory")
                .and_then(|n| self.limit_size(n, "memory")),
            output: obj
                .value("output")
                .and_then(|n| self.limit_size(n, "output")),
            pids: obj
                .value("pids")
                .and_then(|n| self.int(n, "pids", 1, 100_000))
                .map(|p| p.value as u32),
        })
    }

    /// A size of at least one byte.
    fn limit_size(&mut self, node: &Node, key: &str) -> Option<ByteSize> {
        let s = self.scalar_string(node, key)?;
        match s.value.parse::<ByteSize>() {
            Ok(size) if size.bytes() > 0 => Some(size),
            Ok(_) => {
                self.limit_error(s.span, key, "must be more than 0");
                None
            }
            Err(_) => {
                self.limit_error(s.span, key, &format!("`{}` is not a size", s.value));
                None
            }
        }
    }

    fn limit_error(&mut self, span: Span, key: &str, what: &str) {
        self.error(
            span,
            format!("invalid `limits.{key}`: {what}"),
            Some(SIZE_FORMS.into()),
        );
    }
}
