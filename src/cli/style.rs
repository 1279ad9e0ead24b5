//! Colour for status words and table headers. Text is always styled here
//! and written through `anstream`, which strips the escapes when the stream
//! is not a terminal, when `NO_COLOR` is set, or when `CLICOLOR=0`
//! (`CLICOLOR_FORCE=1` keeps them): one decision, in one crate, for every
//! command.

use anstyle::{AnsiColor, Style};

/// Table headers.
pub const HEADER: Style = Style::new().bold();

/// The colour of a status word: green for good, red for bad, yellow for
/// stopped or given up, cyan for not started yet.
#[must_use]
pub fn status(word: &str) -> Style {
    let colour = match word {
        "running" | "succeeded" | "ok" | "up" => AnsiColor::Green,
        "failed" | "timed_out" | "abandoned" | "dead" | "unreadable" | "oom_killed" => {
            AnsiColor::Red
        }
        "exited" | "stopped" | "cancelled" | "skipped" | "paused" | "removing" => AnsiColor::Yellow,
        "created" | "pending" | "planned" | "restarting" => AnsiColor::Cyan,
        _ => return Style::new(),
    };
    Style::new().fg_color(Some(colour.into()))
}

/// `text` in `style` (escapes that `anstream` may strip).
#[must_use]
pub fn paint(style: Style, text: &str) -> String {
    if style == Style::new() {
        text.to_string()
    } else {
        format!("{style}{text}{style:#}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_words_get_colours_and_others_none() {
        assert_eq!(
            paint(status("running"), "running"),
            "\u{1b}[32mrunning\u{1b}[0m"
        );
        assert!(paint(status("failed"), "failed").starts_with("\u{1b}[31m"));
        assert_eq!(paint(status("whatever"), "whatever"), "whatever");
    }
}
