//! The OpenAPI document (schemas/openapi.json) and the routes the server
//! declares (src/server/mod.rs) must name the same paths and methods, and
//! the document must be the one the server serves.

use std::collections::BTreeSet;

use crate::common::repo;

/// `(METHOD, path)` of every `.route("PATH", get(..).post(..))` in the router.
fn routes_in_source(src: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for chunk in src.split(".route(\"").skip(1) {
        let Some((path, rest)) = chunk.split_once('"') else {
            continue;
        };
        // The handlers end where the call's parentheses close.
        let mut depth = 1;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let handlers = &rest[..end];
        for method in ["get", "post", "put", "delete", "patch"] {
            let called = format!("{method}(");
            let at_start = handlers
                .trim_start_matches([',', ' ', '\n'])
                .starts_with(&called);
            if at_start || handlers.contains(&format!(".{called}")) {
                // axum writes a wildcard `{*path}`; OpenAPI, `{path}`.
                out.insert((method.to_uppercase(), path.replace("{*", "{")));
            }
        }
    }
    out
}

fn routes_in_document(doc: &serde_json::Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            out.insert((method.to_uppercase(), path.clone()));
        }
    }
    out
}

#[test]
fn the_openapi_document_names_exactly_the_routes_of_the_server() {
    let src = std::fs::read_to_string(repo().join("src/server/mod.rs")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("schemas/openapi.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        doc["openapi"].as_str().unwrap().split('.').next(),
        Some("3")
    );
    let code = routes_in_source(&src);
    assert!(code.len() >= 10, "the route reader found too few: {code:?}");
    let documented = routes_in_document(&doc);
    let undocumented: Vec<_> = code.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&code).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "schemas/openapi.json drifted from src/server/mod.rs:\n  served but not documented: {undocumented:?}\n  documented but not served: {stale:?}"
    );
    // Every reference resolves.
    let text = doc.to_string();
    for part in text.split("\"#/components/schemas/").skip(1) {
        let name = part.split('"').next().unwrap();
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "dangling $ref {name}"
        );
    }
}

#[test]
fn the_route_reader_sees_methods_and_wildcards() {
    let src = r#"Router::new().route("/a", get(x).post(y)).route("/b/{*p}", post(z))"#;
    let got = routes_in_source(src);
    let want: BTreeSet<(String, String)> = [("GET", "/a"), ("POST", "/a"), ("POST", "/b/{p}")]
        .iter()
        .map(|(m, p)| ((*m).to_string(), (*p).to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn the_server_serves_the_document_in_schemas() {
    assert_eq!(
        pocketdock::server::OPENAPI,
        std::fs::read_to_string(repo().join("schemas/openapi.json")).unwrap()
    );
}
