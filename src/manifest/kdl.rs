//! KDL (v2) into marked [`Node`]s, so `job.kdl` decodes exactly like `job.yaml`.
//!
//! The mapping, documented for users in docs/manifest.md:
//!
//! - `sandbox "ID" …` and `step "ID" …` at the top level become entries of
//!   `sandboxes` and `steps`; the rest of the node is the entry's body.
//! - A node's body: properties and child nodes become map keys
//!   (`mem="512m"` and `mem "512m"` mean the same); one argument is a
//!   scalar; several arguments are a list; children all named `-` are a list.
//! - `run "CMD" lang="python"`, `snapshot "IMAGE"`, `session "CMD" name="b"`
//!   and `python "CODE" timeout=5` may mix one argument with properties:
//!   the argument is `cmd` (`image`, `send`, `code`).
//! - Keys the manifest defines may be written kebab-case (`allow-failure`);
//!   the decoder accepts them for the snake_case keys.

use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};

use super::limits::{Limit, Limits};
use super::node::{Key, Node, NodeKind};
use crate::diag::Diagnostic;
use crate::diag::{Source, Span};
use crate::steps::Kind;

/// Parse `source` as a KDL v2 document, nested at most `limits`' depth.
pub(crate) fn parse(source: &Source, limits: &Limits) -> Result<Node, Vec<Diagnostic>> {
    // The kdl crate recurses once per nesting level, and its time doubles
    // with each block nested under a slash-dash: check before it runs.
    let depth = limits.get_usize(Limit::Depth);
    if let Some(at) = too_deep(source.text(), depth) {
        return Err(vec![Diagnostic::new(
            source,
            Span::new(at, at + 1),
            format!("the manifest nests nodes more than {depth} deep"),
        )
        .hint(Limit::Depth.how_to_raise())]);
    }
    if let Some(at) = slashdashed_too_deep(source.text()) {
        return Err(vec![Diagnostic::new(
            source,
            Span::new(at, at + 1),
            format!("the manifest nests blocks under a `/-` more than {SLASHDASH_DEPTH} deep"),
        )
        .hint(
            "delete the commented-out nodes instead of slash-dashing them".to_string(),
        )]);
    }
    // Broken text is first parsed with every slash-dash blanked (same
    // offsets): the kdl crate's recovery from errors under slash-dashes
    // can double its work with each one (a fuzzer's 1.2 KB gave 1.7
    // million diagnostics in 20 s), and slash-dashed text must be valid
    // KDL anyway. Only text that parses so goes to the real parse.
    if source.text().contains("/-") {
        KdlDocument::parse_v2(&source.text().replace("/-", "  "))
            .map_err(|e| kdl_errors(source, &e))?;
    }
    let doc = KdlDocument::parse_v2(source.text()).map_err(|e| kdl_errors(source, &e))?;
    let mut conv = Converter {
        source,
        diags: Vec::new(),
    };
    let root = conv.document(&doc);
    if conv.diags.is_empty() {
        Ok(root)
    } else {
        Err(conv.diags)
    }
}

/// The kdl crate's errors as diagnostics.
fn kdl_errors(source: &Source, e: &kdl::KdlError) -> Vec<Diagnostic> {
    e.diagnostics
        .iter()
        .map(|d| {
            let span = Span::new(d.span.offset(), d.span.offset() + d.span.len());
            let message = d
                .message
                .clone()
                .or_else(|| d.label.clone())
                .unwrap_or_else(|| "invalid KDL".into());
            let word = source.text().get(span.start..).unwrap_or("");
            let hint = d.help.clone().or_else(|| {
                ["true", "false", "null"]
                    .iter()
                    .any(|w| word.starts_with(w))
                    .then(|| {
                        "KDL 2 writes booleans and null as #true, #false and #null".to_string()
                    })
            });
            Diagnostic::new(source, span, message).maybe_hint(hint)
        })
        .collect()
}

/// `sandbox "ID" …` or `step "ID" …` nodes, gathered into one map.
struct Group {
    node: &'static str,
    plural: &'static str,
    entries: Vec<(Key, Node)>,
    seen: std::collections::HashMap<String, Span>,
    first: Option<Span>,
}

impl Group {
    fn new(node: &'static str, plural: &'static str) -> Group {
        Group {
            node,
            plural,
            entries: Vec::new(),
            seen: std::collections::HashMap::new(),
            first: None,
        }
    }
}

struct Converter<'a> {
    source: &'a Source,
    diags: Vec<Diagnostic>,
}

fn span_of(s: miette::SourceSpan) -> Span {
    Span::new(s.offset(), s.offset() + s.len())
}

impl Converter<'_> {
    fn error(&mut self, span: Span, message: impl Into<String>, hint: Option<&str>) {
        let d = Diagnostic::new(self.source, span, message).maybe_hint(hint.map(String::from));
        self.diags.push(d);
    }

    fn document(&mut self, doc: &KdlDocument) -> Node {
        let mut top: Vec<(Key, Node)> = Vec::new();
        let mut groups = [
            Group::new("sandbox", "sandboxes"),
            Group::new("step", "steps"),
        ];
        for node in doc.nodes() {
            let name = node.name().value();
            let name_span = span_of(node.name().span());
            if let Some(group) = groups.iter_mut().find(|g| g.node == name) {
                group.first.get_or_insert(name_span);
                let Some((id, rest)) = node
                    .entries()
                    .split_first()
                    .filter(|(id, _)| id.name().is_none())
                else {
                    self.error(
                        name_span,
                        format!("`{name}` needs an id as its first argument"),
                        Some(&format!("write `{name} \"ID\" …`")),
                    );
                    continue;
                };
                let KdlValue::String(id_str) = id.value() else {
                    self.error(
                        span_of(id.span()),
                        format!("a {name} id must be a string"),
                        None,
                    );
                    continue;
                };
                let key = Key {
                    name: id_str.clone(),
                    span: span_of(id.span()),
                };
                let body = if rest.is_empty() && node.children().is_none() {
                    Node::new(NodeKind::Map(Vec::new()), name_span)
                } else {
                    self.body(node, rest, name_span, None)
                };
                if let Some(first) = group.seen.get(&key.name) {
                    let (line, col) = self.source.line_col(first.start);
                    self.error(
                        key.span,
                        format!("duplicate {name} `{}`", key.name),
                        Some(&format!(
                            "`{}` is already declared at line {line}, column {col}",
                            key.name
                        )),
                    );
                    continue;
                }
                group.seen.insert(key.name.clone(), key.span);
                group.entries.push((key, body));
                continue;
            }
            if let Some(group) = groups.iter().find(|g| g.plural == name) {
                self.error(
                    name_span,
                    format!(
                        "in KDL, write one `{}` node per entry instead of `{name}`",
                        group.node
                    ),
                    Some(&format!("e.g. `{} \"ID\" …`", group.node)),
                );
                continue;
            }
            let value = self.value(node);
            self.push_entry(
                &mut top,
                Key {
                    name: name.to_string(),
                    span: name_span,
                },
                value,
            );
        }
        for Group {
            plural,
            entries,
            first,
            ..
        } in groups
        {
            if let Some(span) = first {
                top.push((
                    Key {
                        name: plural.to_string(),
                        span,
                    },
                    Node::new(NodeKind::Map(entries), span),
                ));
            }
        }
        let span = Span::new(0, self.source.line_end(0));
        Node::new(NodeKind::Map(top), span)
    }

    fn push_entry(&mut self, entries: &mut Vec<(Key, Node)>, key: Key, value: Node) {
        if let Some((first, _)) = entries.iter().find(|(k, _)| k.name == key.name) {
            let (line, col) = self.source.line_col(first.span.start);
            self.error(
                key.span,
                format!("duplicate key `{}`", key.name),
                Some(&format!(
                    "`{}` is already set at line {line}, column {col}; keep one of them",
                    key.name
                )),
            );
            return;
        }
        entries.push((key, value));
    }

    /// A node as a value: scalar, list or map (see the module docs).
    fn value(&mut self, node: &KdlNode) -> Node {
        let name = node.name().value();
        let name_span = span_of(node.name().span());
        let primary = Kind::from_name(name).and_then(Kind::kdl_primary);
        self.body(node, node.entries(), name_span, primary)
    }

    fn body(
        &mut self,
        node: &KdlNode,
        entries: &[KdlEntry],
        name_span: Span,
        primary: Option<&str>,
    ) -> Node {
        let name = node.name().value();
        let (args, props): (Vec<&KdlEntry>, Vec<&KdlEntry>) =
            entries.iter().partition(|e| e.name().is_none());
        let children = node.children().map(KdlDocument::nodes).unwrap_or_default();
        let map_span = Span::new(name_span.start, self.source.line_end(name_span.start));

        if !children.is_empty() && children.iter().all(|c| c.name().value() == "-") {
            if !args.is_empty() || !props.is_empty() {
                self.error(
                    map_span,
                    format!("`{name}` has both arguments and a `-` list"),
                    Some("use one or the other"),
                );
            }
            let items = children.iter().map(|c| self.value(c)).collect();
            return Node::new(NodeKind::Seq(items), map_span);
        }
        if props.is_empty() && children.is_empty() {
            return match args.as_slice() {
                [] if node.children().is_some() => Node::new(NodeKind::Map(Vec::new()), map_span),
                [] => {
                    self.error(
                        name_span,
                        format!("`{name}` has no value"),
                        Some(&format!(
                            "write `{name} VALUE`, `{name} KEY=VALUE …` or `{name} {{ … }}`"
                        )),
                    );
                    Node::new(NodeKind::Null, name_span)
                }
                [one] => scalar(one),
                many => {
                    let items: Vec<Node> = many.iter().map(|e| scalar(e)).collect();
                    let span = items[0].span.to(items[items.len() - 1].span);
                    Node::new(NodeKind::Seq(items), span)
                }
            };
        }
        let mut map: Vec<(Key, Node)> = Vec::new();
        match (args.as_slice(), primary) {
            ([], _) => {}
            ([one], Some(key)) => map.push((
                Key {
                    name: key.to_string(),
                    span: span_of(one.span()),
                },
                scalar(one),
            )),
            (some, _) => {
                self.error(
                    span_of(some[0].span()),
                    format!("`{name}` mixes arguments with properties or children"),
                    Some("give either values (`key 1 2`) or properties and children (`key a=1 { b 2 }`)"),
                );
            }
        }
        for p in props {
            let id = p.name().expect("props have names");
            let key = Key {
                name: id.value().to_string(),
                span: span_of(id.span()),
            };
            let mut value = scalar(p);
            // The entry spans `key=value`: keep only the value.
            let whole = span_of(p.span());
            let eq = self.source.text()[key.span.end.min(whole.end)..whole.end].find('=');
            value.span = Span::new(eq.map_or(whole.start, |i| key.span.end + i + 1), whole.end);
            self.push_entry(&mut map, key, value);
        }
        for child in children {
            let key = Key {
                name: child.name().value().to_string(),
                span: span_of(child.name().span()),
            };
            let value = self.value(child);
            self.push_entry(&mut map, key, value);
        }
        Node::new(NodeKind::Map(map), map_span)
    }
}

/// How deep blocks may nest under a slash-dash (`/-`, which comments out a
/// node, an entry or a block). The kdl crate's parse of such blocks takes
/// time that doubles with each level (kdl-rs issue 177, open in 6.7.1): a
/// few hundred bytes would take hours. At 8 it stays in milliseconds.
const SLASHDASH_DEPTH: usize = 8;

/// The first `{` nested deeper than [`SLASHDASH_DEPTH`] under a
/// slash-dash. A slash-dash holds until its line ends and covers every
/// block opened meanwhile, and all inside those. Every byte counts, in
/// strings and comments too: where the text is broken the parser's
/// recovery may read them as nodes (it did, in the fuzzer's 684 bytes).
fn slashdashed_too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    // Each open block: whether a slash-dash covers it.
    let mut open: Vec<bool> = Vec::new();
    let mut covered = 0usize;
    let mut pending = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'{' => {
                let under = pending || open.last() == Some(&true);
                open.push(under);
                covered += usize::from(under);
                if covered > SLASHDASH_DEPTH {
                    return Some(i);
                }
                pending = false;
            }
            b'}' => {
                if open.pop() == Some(true) {
                    covered -= 1;
                }
                pending = false;
            }
            b'-' if i > 0 && b[i - 1] == b'/' => pending = true,
            b'\n' => pending = false,
            _ => {}
        }
    }
    None
}

/// The byte offset of the first `{` nested deeper than `limit`, skipping
/// strings (quoted, raw `#"…"#`, multi-line `"""…"""`) and comments (`//`,
/// nested `/* … */`). Where the scan misreads odd text it can only see
/// fewer braces than the parser would in a string-heavy line, never
/// recurse: it is a loop over bytes.
fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
                i += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut nest = 0usize;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        nest += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        nest -= 1;
                        i += 2;
                        if nest == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'#' if matches!(b.get(i + 1), Some(b'#' | b'"')) => {
                // A raw string: `#…#"` … `"#…#`.
                let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                let open = i + hashes;
                if b.get(open) != Some(&b'"') {
                    i = open;
                    continue;
                }
                let mut close = Vec::with_capacity(hashes + 1);
                close.push(b'"');
                close.extend(std::iter::repeat_n(b'#', hashes));
                i = b[open + 1..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |p| open + 1 + p + close.len());
            }
            b'"' if b[i..].starts_with(b"\"\"\"") => {
                i = b[i + 3..]
                    .windows(3)
                    .position(|w| w == b"\"\"\"")
                    .map_or(b.len(), |p| i + 3 + p + 3);
            }
            b'"' => {
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' => i += 2,
                        b'"' => {
                            i += 1;
                            break;
                        }
                        _ => i += 1,
                    }
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn scalar(entry: &KdlEntry) -> Node {
    let span = span_of(entry.span());
    let kind = match entry.value() {
        KdlValue::String(s) => NodeKind::Str(s.clone()),
        KdlValue::Integer(i) => i64::try_from(*i).map_or(NodeKind::Float(*i as f64), NodeKind::Int),
        KdlValue::Float(f) => NodeKind::Float(*f),
        KdlValue::Bool(b) => NodeKind::Bool(*b),
        KdlValue::Null => NodeKind::Null,
    };
    Node::new(kind, span)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Node, Vec<Diagnostic>> {
        parse(&Source::new("job.kdl", text), &Limits::default())
    }

    #[test]
    fn maps_the_kdl_shape_to_the_yaml_shape() {
        let text = r#"version 1
vars { students "alice" "bob"; one { - "x" } }
sandbox "grader" mem="512m" network=#false {
    matrix { student "{{ vars.students }}" }
}
step "grade" sandbox="grader" allow-failure=#true {
    run "python3 -m unittest" lang="python"
}
"#;
        let root = parse_str(text).unwrap();
        let json = root.to_json();
        assert_eq!(
            json,
            serde_json::json!({
                "version": 1,
                "vars": {"students": ["alice", "bob"], "one": ["x"]},
                "sandboxes": {"grader": {"mem": "512m", "network": false,
                    "matrix": {"student": "{{ vars.students }}"}}},
                "steps": {"grade": {"sandbox": "grader", "allow-failure": true,
                    "run": {"cmd": "python3 -m unittest", "lang": "python"}}}
            })
        );
        // Property values point at the value, keys at the key.
        let NodeKind::Map(top) = &root.kind else {
            panic!()
        };
        let (_, sandboxes) = top.iter().find(|(k, _)| k.name == "sandboxes").unwrap();
        let NodeKind::Map(sb) = &sandboxes.kind else {
            panic!()
        };
        assert_eq!(&text[sb[0].0.span.start..sb[0].0.span.end], "\"grader\"");
        let NodeKind::Map(fields) = &sb[0].1.kind else {
            panic!()
        };
        assert_eq!(&text[fields[0].0.span.start..fields[0].0.span.end], "mem");
        assert_eq!(
            &text[fields[0].1.span.start..fields[0].1.span.end],
            "\"512m\""
        );
    }

    #[test]
    fn duplicate_ids_and_keys_are_errors() {
        let err = parse_str("step \"a\" { run \"x\" }\nstep \"a\" { run \"y\" }\n").unwrap_err();
        assert_eq!(err[0].message, "duplicate step `a`");
        assert_eq!(err[0].position(), "2:6");
        let err = parse_str("sandbox \"s\" mem=\"1m\" { mem \"2m\" }\n").unwrap_err();
        assert_eq!(err[0].message, "duplicate key `mem`");
        assert_eq!(err[0].position(), "1:24");
    }

    #[test]
    fn syntax_errors_have_positions_and_v1_hints() {
        let err = parse_str("version 1\nsandbox \"s\" network=false\n").unwrap_err();
        assert_eq!(err[0].line, 2);
        assert!(
            err[0].hint.as_deref().unwrap_or("").contains("#false"),
            "{err:?}"
        );
    }
}
