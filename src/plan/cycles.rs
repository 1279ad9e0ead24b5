//! Cycles among declared steps, found before fan-out so the message names
//! steps, not instances, and reported with their path.

use indexmap::IndexMap;
use petgraph::graph::{DiGraph, NodeIndex};

use super::Edge;
use crate::manifest::{Diagnostic, Manifest, StepDecl};

/// One diagnostic per cycle among declared steps, at a `needs` entry on it.
pub(super) fn find_cycles(manifest: &Manifest, edges: &[Vec<(usize, Edge)>]) -> Vec<Diagnostic> {
    let mut g: DiGraph<(), Edge> = DiGraph::with_capacity(edges.len(), 0);
    for _ in edges {
        g.add_node(());
    }
    for (i, mine) in edges.iter().enumerate() {
        for &(j, e) in mine {
            g.add_edge(NodeIndex::new(i), NodeIndex::new(j), e);
        }
    }
    let mut diags = Vec::new();
    let mut sccs: Vec<Vec<usize>> = petgraph::algo::tarjan_scc(&g)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut c: Vec<usize> = c.into_iter().map(NodeIndex::index).collect();
            c.sort_unstable();
            c
        })
        .collect();
    sccs.sort();
    for scc in sccs {
        let path = cycle_through(scc[0], &scc, edges);
        let steps: Vec<&StepDecl> = path.iter().map(|&(i, _)| &manifest.steps[i]).collect();
        let mut text: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
        text.push(&steps[0].id);
        // Every cycle has a `needs` edge: order edges only point back in the file.
        let needs_span = path.iter().find_map(|&(_, e)| match e {
            Edge::Needs(span) => Some(span),
            Edge::Order | Edge::Copies => None,
        });
        let order_note: Vec<String> = path
            .iter()
            .enumerate()
            .filter_map(|(k, &(i, e))| {
                let next = &manifest.steps[path[(k + 1) % path.len()].0].id;
                let me = &manifest.steps[i];
                match e {
                    Edge::Order => Some(format!(
                        "`{}` waits for `{next}` because it is the next step on sandbox `{}` and has no `needs`",
                        me.id, me.sandbox.value
                    )),
                    Edge::Copies => Some(format!(
                        "`{}` waits for `{next}` because it runs on the copies `{next}` makes",
                        me.id
                    )),
                    Edge::Needs(_) => None,
                }
            })
            .collect();
        let mut hint = "`a -> b` means a waits for b; remove one of these `needs`".to_string();
        for n in order_note {
            hint.push_str("; ");
            hint.push_str(&n);
        }
        let span = needs_span.unwrap_or(steps[0].id_span);
        diags.push(
            Diagnostic::new(
                &manifest.source,
                span,
                format!(
                    "steps wait for each other in a cycle: {}",
                    text.join(" -> ")
                ),
            )
            .hint(hint),
        );
    }
    diags
}

/// A shortest cycle from `start` back to it inside `scc`; each entry is a
/// step and the edge it leaves by.
fn cycle_through(start: usize, scc: &[usize], edges: &[Vec<(usize, Edge)>]) -> Vec<(usize, Edge)> {
    let mut prev: IndexMap<usize, (usize, Edge)> = IndexMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        for &(m, e) in &edges[n] {
            if scc.binary_search(&m).is_err() {
                continue;
            }
            if m == start {
                // Walk back from n to start.
                let mut path = vec![(n, e)];
                let mut cur = n;
                while cur != start {
                    let (p, pe) = prev[&cur];
                    path.push((p, pe));
                    cur = p;
                }
                path.reverse();
                return path;
            }
            if m != start && !prev.contains_key(&m) {
                prev.insert(m, (n, e));
                queue.push_back(m);
            }
        }
    }
    vec![(start, Edge::Order)]
}
