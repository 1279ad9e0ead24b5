use super::*;
use crate::template::arity::{known, FILTER_ARITY, TEST_ARITY};
use crate::template::loops::range_len;

fn problems(text: &str) -> Vec<String> {
    check_calls(text, Syntax::Template, 100_000)
        .into_iter()
        .map(|e| {
            let r = e.range.unwrap();
            format!("{}@{}..{}", e.message, r.start, r.end)
        })
        .collect()
}

#[test]
fn unknown_filters_and_tests_and_bad_arities() {
    assert_eq!(
        problems("{{ x | upper }} {{ x | replace('a', 'b') }}"),
        Vec::<String>::new()
    );
    assert_eq!(problems("{{ x | uper }}"), ["unknown filter `uper`@7..11"]);
    let e = &check_calls("{{ x | uper }}", Syntax::Template, 100_000)[0];
    assert_eq!(e.hint.as_deref(), Some("did you mean `upper`?"));
    assert_eq!(
        problems("{% if x is odd %}{% endif %}{{ x is evn }}"),
        ["unknown test `evn`@36..39"]
    );
    assert_eq!(
        problems("{{ x | replace('a') }}"),
        ["filter `replace` takes 2 arguments, given 1@7..19"]
    );
    assert_eq!(
        problems("{{ x | upper(1) }}"),
        ["filter `upper` takes 0 arguments, given 1@7..15"]
    );
    assert_eq!(
        problems("{% if x is divisibleby %}{% endif %}"),
        ["test `divisibleby` takes 1 argument, given 0@11..22"]
    );
    assert_eq!(
        problems("{{ x | join(*args) }}{{ x | indent(width=2) }}"),
        Vec::<String>::new()
    );
    assert_eq!(
        problems("{% for i in x | sortt %}{{ i }}{% endfor %}{% filter uppr %}a{% endfilter %}")
            .len(),
        2
    );
    assert_eq!(
        check_calls("x | nope and y is defined", Syntax::Expression, 100_000).len(),
        1
    );
}

// Variadic filters were checked by name only: a bad `default` arity or
// a test or filter named inside `select`, `selectattr` or `map` failed
// only when the step ran.
#[test]
fn filters_that_name_a_test_or_filter_check_it() {
    assert_eq!(
        problems("{{ x | select('odd') }}{{ x | selectattr('a', 'eq', 1) }}{{ x | map('upper') }}{{ x | map(attribute='a') }}{{ x | reject }}{{ x | format(1, 2, 3) }}"),
        Vec::<String>::new()
    );
    assert_eq!(
        problems("{{ x | select('od') }}"),
        ["in `select`: unknown test `od`@7..19"]
    );
    assert_eq!(
        problems("{{ x | rejectattr('a', 'eq') }}"),
        ["in `rejectattr`: test `eq` takes 1 argument, given 0@7..28"]
    );
    assert_eq!(
        problems("{{ x | map('replace', 'a') }}"),
        ["in `map`: filter `replace` takes 2 arguments, given 1@7..26"]
    );
    assert_eq!(
        problems("{{ x | default(1, true, 3) }}"),
        ["filter `default` takes 0 to 2 arguments, given 3@7..26"]
    );
}

// Regression: a step template looping 10^9 times passed `validate`
// and ran for minutes in `apply`.
#[test]
fn loops_over_constant_ranges_past_the_fuel_are_reported() {
    let loop9 = "{% for i in range(100000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}";
    let p = problems(loop9);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].starts_with("this loop runs 1000000000 times"), "{p:?}");
    assert_eq!(
        problems("{% for i in range(10, 0, -1) | list %}{% endfor %}"),
        Vec::<String>::new()
    );
    assert_eq!(range_len(&parse_expr("range(10, 0, -3)").unwrap()), Some(4));
    assert_eq!(range_len(&parse_expr("range(1, 10, 2)").unwrap()), Some(5));
    assert_eq!(range_len(&parse_expr("range(5, 1)").unwrap()), Some(0));
    assert_eq!(range_len(&parse_expr("range(n)").unwrap()), None);
}

#[test]
fn every_filter_in_the_table_exists() {
    for (name, ..) in FILTER_ARITY {
        assert!(known("filter", name), "{name}");
    }
    for (name, ..) in TEST_ARITY {
        assert!(known("test", name), "{name}");
    }
    assert!(!known("filter", "definitely_not_a_filter"));
}
