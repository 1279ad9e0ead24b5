//! GitHub workflow-command escaping and the stop-commands token.
//!
//! The runner reads a line starting `::` as a command, so everything we
//! put into one is escaped as the runner's toolkit does (`%`, CR, LF; in
//! property values also `:` and `,`), and everything a sandbox printed is
//! shown between `::stop-commands::<token>` and `::<token>::`, with a
//! token drawn after the output exists, so nothing in it can end the block.

/// Escape a command's message (the text after `::`).
#[must_use]
pub fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a property value (`file=`, `title=`, ...).
#[must_use]
pub fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// A fresh token for one stop-commands block: 128 random bits, hex.
#[must_use]
pub fn stop_token() -> String {
    let mut rng = fastrand::Rng::new();
    format!("pd{:032x}", rng.u128(..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_properties_are_escaped_as_the_runner_expects() {
        assert_eq!(data("50%\r\nnext"), "50%25%0D%0Anext");
        assert_eq!(property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        // A forged command inside a message stays on one line.
        assert!(!data("x\n::add-mask::y").contains('\n'));
    }

    #[test]
    fn tokens_differ() {
        assert_ne!(stop_token(), stop_token());
        assert_eq!(stop_token().len(), 34);
    }
}
