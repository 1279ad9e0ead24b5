//! `steps.<id>`: the sandbox a step runs on, its one action, `needs`, `if`
//! and failure policy.

use std::sync::LazyLock;

use super::top_level::Ids;
use super::values::split_words;
use super::{did_you_mean, hint_for, Decoder, Key, Node, NodeKind, Obj, Span, Spanned};
use crate::manifest::keys::STEP_KEYS;
use crate::manifest::step_decl::StepDecl;
use crate::steps::{Action, Kind};

/// Where a step's action is written, for its kind's decoder.
pub(crate) struct ActionAt<'n> {
    /// The action's value.
    pub value: &'n Node,
    /// Where its key is written.
    pub key_span: Span,
    /// The step's known keys.
    pub step: &'n Obj<'n>,
    /// `step `ID``, for messages.
    pub what: &'n str,
}

/// Keys of a kind's long form written on the step: each kind's.
static STEP_MISPLACED: LazyLock<Vec<(&str, &str)>> = LazyLock::new(|| {
    Kind::ALL
        .iter()
        .flat_map(|k| k.on_step())
        .copied()
        .collect()
});

impl Decoder<'_> {
    pub(super) fn step(
        &mut self,
        id: &Key,
        node: &Node,
        sandboxes: &Ids<'_>,
        steps: &Ids<'_>,
    ) -> Option<StepDecl> {
        let what = format!("step `{}`", id.name);
        let obj = self.obj(node, &what, &id.name, &STEP_KEYS, &STEP_MISPLACED)?;

        let sandbox = self.step_sandbox(id, &obj, sandboxes, &what);
        let (action, first_action) = self.step_action(id, &obj, &what);
        match first_action {
            Some(kind) => kind.decode_step_keys(self, &obj, &what),
            None => self.refuse_with(&obj, &what),
        }
        let needs = obj
            .get("needs")
            .and_then(|(_, n)| self.step_needs(id, n, steps, &what));

        let condition = obj.value("if").and_then(|n| match &n.kind {
            NodeKind::Bool(b) => Some(Spanned::new(b.to_string(), n.span)),
            _ => self.string(n, "if"),
        });
        let timeout = obj
            .value("timeout")
            .and_then(|n| self.duration(n, "timeout"));
        let retries = obj
            .value("retries")
            .and_then(|n| self.int(n, "retries", 0, 100))
            .map_or(0, |r| r.value as u32);
        let allow_failure = obj
            .value("allow_failure")
            .and_then(|n| self.boolean(n, "allow_failure"))
            .unwrap_or(false);
        let name = obj.value("name").and_then(|n| self.string(n, "name"));
        let secrets = obj
            .value("secrets")
            .and_then(|n| self.string_list(n, "secrets"))
            .unwrap_or_default();
        let limits = obj
            .get("limits")
            .and_then(|(k, n)| Some((k.span, self.step_limits(n, &what)?)));

        let cache = self.cache_flag(&obj);
        let cache_key = obj
            .value("cache_key")
            .map(|n| self.cache_inputs(n))
            .unwrap_or_default();
        let (action, action_span) = action?;
        if let (Some((span, _)), false) = (&limits, action.which().takes_limits()) {
            self.error(
                *span,
                format!("{what} has limits, but only `run` steps take them"),
                Some("move the command into a `run` step".into()),
            );
        }
        if let (Some(first), false) = (secrets.first(), action.which().takes_secrets()) {
            self.error(
                first.span,
                format!("{what} lists secrets, but only `run` steps receive them"),
                Some("move the command that needs them into a `run` step".into()),
            );
        }
        Some(StepDecl {
            id: id.name.clone(),
            id_span: id.span,
            name,
            sandbox: sandbox?,
            action,
            action_span,
            needs,
            condition,
            timeout,
            retries,
            allow_failure,
            secrets,
            cache,
            cache_key,
            limits: limits.map(|(_, l)| l),
        })
    }

    /// `sandbox:`, which may be left out when only one sandbox is declared.
    fn step_sandbox(
        &mut self,
        id: &Key,
        obj: &Obj<'_>,
        sandboxes: &Ids<'_>,
        what: &str,
    ) -> Option<Spanned<String>> {
        match obj.value("sandbox") {
            Some(n) => {
                let s = self.string(n, "sandbox");
                if let Some(s) = &s {
                    if !sandboxes.set.contains(s.value.as_str()) {
                        let hint = hint_for(&s.value, "declared sandboxes", &sandboxes.list)
                            .or_else(|| Some("declare it under `sandboxes:`".into()));
                        self.error(
                            s.span,
                            format!("{what} runs on unknown sandbox `{}`", s.value),
                            hint,
                        );
                    }
                }
                s
            }
            None if sandboxes.only.is_some() => Some(Spanned::new(
                sandboxes.only.unwrap_or_default().to_string(),
                id.span,
            )),
            None if obj.misspelt("sandbox") => None,
            None => {
                let hint = if sandboxes.list.is_empty() {
                    "declare a sandbox under `sandboxes:` and name it with `sandbox: ID`"
                        .to_string()
                } else {
                    format!(
                        "add `sandbox: ID`; declared sandboxes: {}",
                        sandboxes.list.join(", ")
                    )
                };
                self.error(id.span, format!("{what} has no `sandbox`"), Some(hint));
                None
            }
        }
    }

    /// The step's one action, and the key of the first one written (which
    /// decides the checks that follow even when its body is wrong).
    fn step_action(
        &mut self,
        id: &Key,
        obj: &Obj<'_>,
        what: &str,
    ) -> (Option<(Action, Span)>, Option<Kind>) {
        let mut action: Option<(Action, Span)> = None;
        let mut first_action: Option<Kind> = None;
        for &kind in Kind::ALL {
            let Some((key, value)) = obj.get(kind.name()) else {
                continue;
            };
            if let Some(first) = first_action {
                self.error(
                    key.span,
                    format!(
                        "{what} has two actions, `{}` and `{}`",
                        first.name(),
                        kind.name()
                    ),
                    Some("a step does one thing: split it into two steps".into()),
                );
                continue;
            }
            first_action = Some(kind);
            let at = ActionAt {
                value,
                key_span: key.span,
                step: obj,
                what,
            };
            action = kind.decode(self, &at).map(|a| (a, key.span));
        }
        let misspelt_action = Kind::ALL.iter().any(|k| obj.misspelt(k.name()));
        if first_action.is_none() && !misspelt_action {
            self.error(
                id.span,
                format!("{what} has no action"),
                Some(
                    "give it one of `run`, `push`, `pull`, `snapshot`, `session`, `python` or `fork`, or `uses` a recipe"
                        .into(),
                ),
            );
        }
        (action, first_action)
    }

    /// `with` is refused on a step that does not `uses` a recipe.
    pub(crate) fn refuse_with(&mut self, obj: &Obj<'_>, what: &str) {
        if let Some((k, _)) = obj.get("with") {
            self.error(
                k.span,
                format!("{what} has `with` but no `uses`"),
                Some("`with` gives the inputs of the recipe named by `uses: NAME`".into()),
            );
        }
    }

    /// `needs:`, each name a declared step other than this one.
    fn step_needs(
        &mut self,
        id: &Key,
        node: &Node,
        steps: &Ids<'_>,
        what: &str,
    ) -> Option<Vec<Spanned<String>>> {
        let list = self.string_list(node, "needs")?;
        // `needs: "a b"` (handy in KDL properties) names two steps.
        let mut out = Vec::with_capacity(list.len());
        for item in list {
            out.extend(split_words(&item, self.src));
        }
        for need in &out {
            if need.value == id.name {
                self.error(
                    need.span,
                    format!("{what} needs itself"),
                    Some("remove it from `needs`".into()),
                );
            } else if !steps.set.contains(need.value.as_str()) {
                let hint = did_you_mean(&need.value, steps.list.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some(format!("declared steps: {}", steps.list.join(", "))));
                self.error(
                    need.span,
                    format!("{what} needs unknown step `{}`", need.value),
                    hint,
                );
            }
        }
        Some(out)
    }
}
