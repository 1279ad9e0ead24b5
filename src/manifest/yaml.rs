//! YAML into marked [`Node`]s, from yaml-rust2's event stream.
//!
//! serde_yaml keeps no positions once a document is parsed, yet every
//! semantic error (an unknown `needs` id, a bad size) must point at its node.
//! yaml-rust2's parser emits each event with a character offset, so this module
//! builds its own tree from events: each scalar, key and collection keeps
//! its span. Scalars resolve by the YAML 1.2 core schema (`no` is a string).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};
use yaml_rust2::Yaml;

use super::limits::{Limit, Limits};
use super::node::{Key, Node, NodeKind};
use crate::diag::Diagnostic;
use crate::diag::{Source, Span};

/// Parse `source` as one YAML document, within `limits` (nesting depth
/// and alias expansion).
///
/// The events are pulled one by one rather than through yaml-rust2's
/// `Parser::load`, which recurses once per nesting level: a file nested a
/// hundred thousand deep would overflow the stack before any check ran.
pub(crate) fn parse(source: &Source, limits: &Limits) -> Result<Node, Vec<Diagnostic>> {
    let mut builder = Builder {
        source,
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        documents: 0,
        diags: Vec::new(),
        depth_limit: limits.get_usize(Limit::Depth),
        alias_limit: limits.get_usize(Limit::Aliases),
        alias_budget: limits.get_usize(Limit::Aliases),
        stop: None,
    };
    let mut parser = Parser::new_from_str(source.text());
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => break,
            Ok((ev, mark)) => {
                builder.on_event(ev, mark);
                if let Some(d) = builder.stop.take() {
                    return Err(vec![d]);
                }
            }
            Err(e) => return Err(vec![scan_error(source, &e)]),
        }
    }
    if !builder.diags.is_empty() {
        return Err(builder.diags);
    }
    match builder.root {
        Some(root) if root.kind != NodeKind::Null => Ok(root),
        _ => Err(vec![Diagnostic::new(
            source,
            Span::new(0, 0),
            "the manifest is empty",
        )
        .hint("start with `version: 1`; see docs/manifest.md")]),
    }
}

fn scan_error(source: &Source, e: &ScanError) -> Diagnostic {
    let mut at = source.byte_of_char(e.marker().index());
    // The scanner marks where the token began; point at the tab itself.
    if e.info().contains("tab") {
        if let Some(i) = source.text().get(at..).and_then(|t| t.find('\t')) {
            at += i;
        }
    }
    Diagnostic::new(source, Span::new(at, at + 1), e.info().to_string())
        .maybe_hint(scan_hint(e.info()))
}

fn scan_hint(info: &str) -> Option<String> {
    if info.contains("recursion limit") {
        Some("the manifest nests lists or maps too deep: flatten it".into())
    } else if info.contains("tab") {
        Some("indent with spaces: YAML does not allow tabs for indentation".into())
    } else if info.contains("mapping values are not allowed") {
        Some("check this line's indentation against the line above, or quote a value that contains `: `".into())
    } else if info.contains("did not find expected key")
        || info.contains("expected <document start>")
    {
        Some("check the indentation of this line and the lines above".into())
    } else {
        None
    }
}

/// In a map, what the next node is.
enum Pending {
    /// A key.
    Key,
    /// The value of this key.
    Value(Key),
    /// The value of a key that was a duplicate or unusable (already reported).
    Drop,
}

enum Frame {
    Seq {
        start: usize,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        start: usize,
        anchor: usize,
        entries: Vec<(Key, Node)>,
        /// Where each key is, to find duplicates without a quadratic scan.
        seen: HashMap<String, Span>,
        /// What the next node is.
        pending: Pending,
    },
}

struct Builder<'a> {
    source: &'a Source,
    stack: Vec<Frame>,
    /// Anchored nodes, with their size in nodes and their depth.
    anchors: HashMap<usize, (Node, usize, usize)>,
    root: Option<Node>,
    documents: usize,
    diags: Vec<Diagnostic>,
    depth_limit: usize,
    /// Nodes aliases may copy, and may still copy.
    alias_limit: usize,
    alias_budget: usize,
    /// A limit was hit: parsing stops with this.
    stop: Option<Diagnostic>,
}

impl Builder<'_> {
    fn too_deep(&mut self, at: usize) {
        let limit = self.depth_limit;
        self.stop = Some(
            Diagnostic::new(
                self.source,
                Span::new(at, at + 1),
                format!("the manifest nests maps and lists more than {limit} deep"),
            )
            .hint(Limit::Depth.how_to_raise()),
        );
    }

    fn on_event(&mut self, ev: Event, mark: Marker) {
        // Markers count characters; spans are bytes.
        let at = self.source.byte_of_char(mark.index());
        match ev {
            Event::DocumentStart => self.document_start(at),
            Event::SequenceStart(..) | Event::MappingStart(..)
                if self.stack.len() >= self.depth_limit =>
            {
                self.too_deep(at);
            }
            Event::SequenceStart(_, Some(tag)) | Event::MappingStart(_, Some(tag))
                if !is_plain(&tag) =>
            {
                self.tagged(&tag, at);
            }
            Event::Scalar(_, _, _, Some(tag)) if !is_plain(&tag) => self.tagged(&tag, at),
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                start: at,
                anchor,
                items: Vec::new(),
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                start: at,
                anchor,
                entries: Vec::new(),
                seen: HashMap::new(),
                pending: Pending::Key,
            }),
            Event::SequenceEnd | Event::MappingEnd => self.close_collection(),
            Event::Scalar(value, style, anchor, tag) => {
                let span = if value.is_empty() && style == TScalarStyle::Plain {
                    self.empty_value_span(at)
                } else {
                    Span::new(at, scalar_end(self.source.text(), at, style, &value))
                };
                let kind = resolve(value, style, tag.as_ref());
                self.insert(Node::new(kind, span), anchor);
            }
            Event::Alias(id) => self.alias(id, at),
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }

    /// A tag other than `!!str`: the language has no types a tag could
    /// name, and a tag that meant something elsewhere (`!!python/object`)
    /// must not pass unnoticed. Parsing stops here.
    fn tagged(&mut self, tag: &Tag, at: usize) {
        let written = if tag.handle == CORE_TAGS {
            format!("!!{}", tag.suffix)
        } else {
            format!("{}{}", tag.handle, tag.suffix)
        };
        let span = tag_span(self.source.text(), at, &tag.suffix);
        self.stop = Some(
            Diagnostic::new(
                self.source,
                span,
                format!("YAML tag `{written}` is not supported"),
            )
            .hint("remove the tag: a manifest is plain YAML (quote a value to make it a string)"),
        );
    }

    /// Only the first document is read; a second one is a mistake.
    fn document_start(&mut self, at: usize) {
        self.documents += 1;
        if self.documents == 2 {
            self.diags.push(
                Diagnostic::new(
                    self.source,
                    Span::new(at, at + 3),
                    "a manifest is one YAML document, found a second one",
                )
                .hint("remove the `---` line, or split the documents into separate files"),
            );
        }
    }

    /// The end of a list or map: it becomes a node of its parent.
    fn close_collection(&mut self) {
        let (kind, start, anchor) = match self.stack.pop() {
            Some(Frame::Seq {
                start,
                anchor,
                items,
            }) => {
                let start = items.first().map_or(start, |n| n.span.start.min(start));
                (NodeKind::Seq(items), start, anchor)
            }
            Some(Frame::Map {
                start,
                anchor,
                entries,
                ..
            }) => {
                // A block mapping's event is marked after its first key.
                let start = entries
                    .first()
                    .map_or(start, |(k, _)| k.span.start.min(start));
                (NodeKind::Map(entries), start, anchor)
            }
            None => return,
        };
        let span = Span::new(start, self.source.line_end(start));
        self.insert(Node::new(kind, span), anchor);
    }

    /// `*x`: a copy of the anchored node, within the alias and depth limits.
    fn alias(&mut self, id: usize, at: usize) {
        let node = match self.anchors.get(&id) {
            Some((n, size, depth)) => {
                if *size > self.alias_budget {
                    self.stop = Some(
                        Diagnostic::new(
                            self.source,
                            Span::new(at, at + 1),
                            format!(
                                "aliases copy more than {} nodes in all",
                                self.alias_limit
                            ),
                        )
                        .hint(format!(
                            "anchors and aliases (`&x`, `*x`) that expand a value many times are refused; {}",
                            Limit::Aliases.how_to_raise()
                        )),
                    );
                    return;
                }
                if self.stack.len() + depth > self.depth_limit {
                    self.too_deep(at);
                    return;
                }
                self.alias_budget -= size;
                Node::new(n.kind.clone(), Span::new(at, self.source.line_end(at)))
            }
            None => Node::new(NodeKind::Null, Span::new(at, at + 1)),
        };
        self.insert(node, 0);
    }
}

impl Builder<'_> {
    /// Where an empty value is: yaml-rust2 marks it at the next token,
    /// often on a later line; it is right after its key's `:`.
    fn empty_value_span(&self, at: usize) -> Span {
        if let Some(Frame::Map {
            pending: Pending::Value(key),
            ..
        }) = self.stack.last()
        {
            let text = self.source.text();
            let line_end = self.source.line_end(key.span.end);
            if let Some(colon) = text
                .get(key.span.end..line_end)
                .and_then(|rest| rest.find(':'))
            {
                let after = key.span.end + colon + 1;
                return Span::new(after, after);
            }
        }
        Span::new(at, at)
    }

    fn insert(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            let (size, depth) = measure(&node);
            self.anchors.insert(anchor, (node.clone(), size, depth));
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                seen,
                pending,
                ..
            }) => match std::mem::replace(pending, Pending::Key) {
                Pending::Value(key) => entries.push((key, node)),
                Pending::Drop => {}
                Pending::Key => {
                    let Some(key) = key_name(&node) else {
                        self.diags.push(Diagnostic::new(
                            self.source,
                            node.span,
                            format!("a key must be a plain string, found {}", node.type_name()),
                        ));
                        *pending = Pending::Drop;
                        return;
                    };
                    if let Some(first) = seen.get(&key) {
                        let (line, col) = self.source.line_col(first.start);
                        self.diags.push(
                            Diagnostic::new(self.source, node.span, format!("duplicate key `{key}`"))
                                .hint(format!("`{key}` is already set at line {line}, column {col}; keep one of them")),
                        );
                        *pending = Pending::Drop;
                        return;
                    }
                    seen.insert(key.clone(), node.span);
                    *pending = Pending::Value(Key {
                        name: key,
                        span: node.span,
                    });
                }
            },
        }
    }
}

/// Nodes in `node` and its depth (a scalar is 0 deep).
fn measure(node: &Node) -> (usize, usize) {
    match &node.kind {
        NodeKind::Seq(items) => items.iter().fold((1, 1), |(n, d), i| {
            let (s, id) = measure(i);
            (n + s, d.max(id + 1))
        }),
        NodeKind::Map(entries) => entries.iter().fold((1, 1), |(n, d), (_, v)| {
            let (s, vd) = measure(v);
            (n + s + 1, d.max(vd + 1))
        }),
        _ => (1, 0),
    }
}

fn key_name(node: &Node) -> Option<String> {
    match &node.kind {
        NodeKind::Str(s) => Some(s.clone()),
        NodeKind::Int(i) => Some(i.to_string()),
        NodeKind::Bool(b) => Some(b.to_string()),
        NodeKind::Float(f) => Some(f.to_string()),
        NodeKind::Null | NodeKind::Seq(_) | NodeKind::Map(_) => None,
    }
}

/// Where a tag ending in `suffix` is written, for a node the parser marks
/// at `at`: a scalar's mark is its value, after the tag; a collection's may
/// be the tag itself. From its `!` to the end of its suffix.
fn tag_span(text: &str, at: usize, suffix: &str) -> Span {
    let at = at.min(text.len());
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let found = text[line_start..at]
        .rfind(suffix)
        .map(|i| line_start + i)
        .or_else(|| text[at..].find(suffix).map(|i| at + i));
    let Some(suffix_at) = found else {
        return Span::new(at, at + 1);
    };
    let mut bang = text[..suffix_at].rfind('!').unwrap_or(suffix_at);
    // `!!` is one handle.
    if bang > 0 && text.as_bytes()[bang - 1] == b'!' {
        bang -= 1;
    }
    Span::new(bang, suffix_at + suffix.len())
}

/// The prefix `!!` stands for.
const CORE_TAGS: &str = "tag:yaml.org,2002:";

/// `!!str`, the one tag a manifest may carry (it makes a string).
fn is_plain(tag: &Tag) -> bool {
    tag.handle == CORE_TAGS && tag.suffix == "str"
}

/// The core schema: plain scalars may be null, booleans or numbers; quoted
/// ones and `!!str` are strings.
fn resolve(value: String, style: TScalarStyle, tag: Option<&Tag>) -> NodeKind {
    if style != TScalarStyle::Plain || tag.is_some_and(is_plain) {
        return NodeKind::Str(value);
    }
    match Yaml::from_str(&value) {
        Yaml::Null => NodeKind::Null,
        Yaml::Boolean(b) => NodeKind::Bool(b),
        Yaml::Integer(i) => NodeKind::Int(i),
        Yaml::Real(r) => match r.parse::<f64>() {
            Ok(f) => NodeKind::Float(f),
            Err(_) => NodeKind::Str(value),
        },
        _ => NodeKind::Str(value),
    }
}

/// Where a scalar's text ends (events carry only the start).
fn scalar_end(text: &str, start: usize, style: TScalarStyle, value: &str) -> usize {
    let start = start.min(text.len());
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let rest = &text[start..line_end];
    let closing = |quote: char, escape: Option<char>| {
        let mut chars = rest.char_indices().skip(1).peekable();
        while let Some((i, c)) = chars.next() {
            if Some(c) == escape {
                chars.next();
            } else if c == quote {
                // In single quotes, '' is an escaped quote.
                if escape.is_none() && chars.peek().is_some_and(|&(_, n)| n == quote) {
                    chars.next();
                    continue;
                }
                return start + i + 1;
            }
        }
        line_end
    };
    match style {
        TScalarStyle::Plain if !value.contains('\n') && rest.starts_with(value) => {
            start + value.len()
        }
        TScalarStyle::SingleQuoted => closing('\'', None),
        TScalarStyle::DoubleQuoted => closing('"', Some('\\')),
        _ => start + rest.trim_end().len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Node, Vec<Diagnostic>> {
        parse(&Source::new("t.yaml", text), &Limits::default())
    }

    fn map(node: &Node) -> &[(Key, Node)] {
        match &node.kind {
            NodeKind::Map(m) => m,
            other => panic!("not a map: {other:?}"),
        }
    }

    #[test]
    fn scalars_keys_and_spans() {
        let text = "version: 1\nname: 'it''s'\nrun: \"a \\\" b\"\nok: true\nno: no\nf: 1.5\nn:\n";
        let root = parse_str(text).unwrap();
        let m = map(&root);
        let at = |i: usize| &text[m[i].1.span.start..m[i].1.span.end];
        assert_eq!(m[0].1.kind, NodeKind::Int(1));
        assert_eq!(at(0), "1");
        assert_eq!(m[1].1.kind, NodeKind::Str("it's".into()));
        assert_eq!(at(1), "'it''s'");
        assert_eq!(at(2), "\"a \\\" b\"");
        assert_eq!(m[3].1.kind, NodeKind::Bool(true));
        assert_eq!(m[4].1.kind, NodeKind::Str("no".into()));
        assert_eq!(m[5].1.kind, NodeKind::Float(1.5));
        assert_eq!(m[6].1.kind, NodeKind::Null);
        assert_eq!(&text[m[4].0.span.start..m[4].0.span.end], "no");
        assert_eq!(root.span.start, 0);
    }

    #[test]
    fn nested_collections_keep_order_and_positions() {
        let text = "steps:\n  b: {run: x}\n  a:\n    needs: [x, y]\n";
        let root = parse_str(text).unwrap();
        let steps = map(&map(&root)[0].1);
        assert_eq!(steps[0].0.name, "b");
        assert_eq!(steps[1].0.name, "a");
        let needs = &map(&steps[1].1)[0].1;
        let NodeKind::Seq(items) = &needs.kind else {
            panic!()
        };
        assert_eq!(&text[items[1].span.start..items[1].span.end], "y");
    }

    #[test]
    fn duplicate_keys_are_errors_at_the_second_key() {
        let err = parse_str("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(err.len(), 1);
        assert_eq!(err[0].message, "duplicate key `a`");
        assert_eq!(err[0].position(), "3:1");
        assert!(err[0].hint.as_deref().unwrap().contains("line 1, column 1"));
    }

    #[test]
    fn syntax_errors_carry_the_scanner_position() {
        let err = parse_str("a: 1\n  b: 2\n").unwrap_err();
        assert_eq!(err[0].position(), "2:4");
        assert!(
            err[0].message.contains("mapping values"),
            "{}",
            err[0].message
        );
        assert!(err[0].hint.is_some());
    }

    #[test]
    fn tags_are_errors_at_the_tag_but_str() {
        let cases = [
            (
                "a: 1\nb: !!python/object:os.system x\n",
                "2:4",
                "!!python/object:os.system",
            ),
            ("a: !foo bar\n", "1:4", "!foo"),
            ("a:\n  - !!map {x: 1}\n", "2:5", "!!map"),
            (
                "a: !<tag:example.com,1:x> [1]\n",
                "1:4",
                "tag:example.com,1:x",
            ),
            ("a: !!int 3\n", "1:4", "!!int"),
        ];
        for (text, pos, tag) in cases {
            let err = parse_str(text).unwrap_err();
            assert_eq!(err.len(), 1, "{text}: {err:?}");
            assert!(err[0].message.contains(tag), "{text}: {}", err[0].message);
            assert!(
                err[0].message.ends_with("is not supported"),
                "{}",
                err[0].message
            );
            assert_eq!(err[0].position(), pos, "{text}");
        }
        let root = parse_str("a: !!str 12\n").unwrap();
        assert_eq!(map(&root)[0].1.kind, NodeKind::Str("12".into()));
    }

    #[test]
    fn aliases_copy_the_anchored_node() {
        let root = parse_str("a: &x [1, 2]\nb: *x\n").unwrap();
        assert_eq!(map(&root)[1].1.to_json(), serde_json::json!([1, 2]));
    }

    #[test]
    fn empty_and_multi_document_files_are_errors() {
        assert_eq!(
            parse_str("").unwrap_err()[0].message,
            "the manifest is empty"
        );
        assert_eq!(
            parse_str("# only a comment\n").unwrap_err()[0].message,
            "the manifest is empty"
        );
        let err = parse_str("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(err[0].message.contains("second"), "{}", err[0].message);
        assert_eq!(err[0].position(), "2:1");
    }

    // Regression: yaml-rust2 markers count characters, and were used as byte
    // offsets: non-ASCII text panicked ("not a char boundary") or shifted
    // every later position.
    #[test]
    fn non_ascii_text_keeps_byte_spans_and_character_columns() {
        let text = "name: \"résumé\"\nrun: echo 日本語 && echo 😀\nafter: [é, x]\nlast: 1\n";
        let source = Source::new("t.yaml", text);
        let root = parse(&source, &Limits::default()).unwrap();
        let m = map(&root);
        let at = |n: &Node| &text[n.span.start..n.span.end];
        assert_eq!(at(&m[0].1), "\"résumé\"");
        assert_eq!(at(&m[1].1), "echo 日本語 && echo 😀");
        let NodeKind::Seq(items) = &m[2].1.kind else {
            panic!()
        };
        assert_eq!(at(&items[1]), "x");
        assert_eq!(source.line_col(items[1].span.start), (3, 12));
        assert_eq!(&text[m[3].0.span.start..m[3].0.span.end], "last");
    }

    #[test]
    fn non_ascii_syntax_errors_point_at_the_character() {
        // An 8-byte input that panicked: a flow map whose key is `é`.
        let root = parse_str("x: {é}").unwrap();
        assert_eq!(map(&map(&root)[0].1)[0].0.name, "é");
        let err = parse_str("é: 日本\n  b: 2\n").unwrap_err();
        assert_eq!(err[0].position(), "2:4");
    }
}
