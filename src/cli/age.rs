//! How long ago, as the command line writes it: a number and a unit
//! (`90`, `30m`, `12h`, `7d`, `2w`), for `prune --older-than`, `cache
//! prune` and `logs --since`.

use std::time::Duration;

/// `s` as a duration: seconds without a unit, else s, m, h, d or w.
pub(super) fn parse_age(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("`{s}` is not an age: a number and a unit, as in 30m, 12h, 7d, 2w"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "unknown unit `{unit}` in `{s}`: use s, m, h, d or w"
            ))
        }
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

#[cfg(test)]
mod tests {
    use super::parse_age;
    use std::time::Duration;

    #[test]
    fn ages_read_with_their_unit() {
        assert_eq!(parse_age("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_age("30m"), Ok(Duration::from_mins(30)));
        assert_eq!(parse_age("7d"), Ok(Duration::from_hours(7 * 24)));
        assert_eq!(parse_age("2w"), Ok(Duration::from_hours(14 * 24)));
        assert!(parse_age("7y").unwrap_err().contains("unknown unit"));
        assert!(parse_age("d").is_err());
    }
}
