//! "Did you mean …?" for misspelt keys and ids.

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let limit = word.chars().count().div_ceil(3).max(1);
    candidates
        .into_iter()
        .filter_map(|c| {
            let d = strsim::damerau_levenshtein(&lower, &c.to_lowercase());
            let close =
                (d <= limit && d < c.chars().count()) || (c.starts_with(word) && word.len() >= 3);
            close.then_some((d, c))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A hint naming the closest candidate, or listing all of them.
pub(crate) fn hint_for(word: &str, what: &str, candidates: &[&str]) -> Option<String> {
    if let Some(s) = did_you_mean(word, candidates.iter().copied()) {
        return Some(format!("did you mean `{s}`?"));
    }
    match candidates.len() {
        0 => None,
        _ if candidates.len() > 12 => Some(format!(
            "{what}: {}, … ({} in all)",
            candidates[..12].join(", "),
            candidates.len()
        )),
        _ => Some(format!("{what}: {}", candidates.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_words_only() {
        let keys = ["sandbox", "needs", "run", "timeout", "allow_failure"];
        assert_eq!(did_you_mean("sandboxx", keys), Some("sandbox"));
        assert_eq!(did_you_mean("sanbdox", keys), Some("sandbox"));
        assert_eq!(did_you_mean("need", keys), Some("needs"));
        assert_eq!(did_you_mean("allow_fail", keys), Some("allow_failure"));
        assert_eq!(did_you_mean("Run", keys), Some("run"));
        assert_eq!(did_you_mean("banana", keys), None);
        assert_eq!(did_you_mean("x", keys), None);
    }

    #[test]
    fn lists_candidates_when_nothing_is_close() {
        assert_eq!(
            hint_for("zzz", "declared sandboxes", &["a1", "b2"]).unwrap(),
            "declared sandboxes: a1, b2"
        );
        assert_eq!(hint_for("zzz", "x", &[]), None);
    }
}
