//! What the shell is told: the init script that defines the sentinel
//! functions, and the line(s) that run one command between sentinels.

use std::fmt::Write as _;

/// A TTY in canonical mode cuts input lines at 4095 bytes: longer commands
/// are sent in pieces of about this size.
const TTY_LINE: usize = 2000;

/// Set up the shell: no history, fixed prompts, the sentinel functions.
/// `__pd_begin TOKEN [STATUS]` prints the begin sentinel and remembers the
/// token; `__pd_done` (the `PROMPT_COMMAND`, run after every command line,
/// also an interrupted one) prints the end sentinel with `$?`. Both keep `$?`.
pub(super) fn init_script(token: &str, tty: bool) -> String {
    let both = |fmt: &str, args: &str| {
        let out = format!("builtin printf '{fmt}' {args}");
        if tty {
            out
        } else {
            format!("{out} >&2; {out}")
        }
    };
    let begin = both("__PD_%s_BEGIN__\\n", "\"$1\"");
    let done = both("\\n__PD_%s_END_%s__\\n", "\"$__pd_tok\" \"$s\"");
    let ready = both(
        "__PD_%s_READY_%s_%s__\\n",
        &format!("{token} \"$$\" \"${{POCKETDOCK_EXEC-}}\""),
    );
    let (stty, ps1) = if tty {
        ("stty -echo 2>/dev/null; ", "\\w $ ")
    } else {
        ("", "")
    };
    format!(
        "{stty}set +H +o history; unset HISTFILE MAILCHECK PROMPT_COMMAND; PS1='{ps1}'; PS2=''; __pd_tok=; \
         __pd_begin() {{ local s=${{2:-$?}}; __pd_tok=$1; {begin}; return $s; }}; \
         __pd_done() {{ local s=$?; if [[ -n $__pd_tok ]]; then {done}; __pd_tok=; fi; return $s; }}; \
         PROMPT_COMMAND=__pd_done; {ready}\n"
    )
}

/// The line(s) that run `cmd` between sentinels. The command goes to `eval`
/// as one ANSI-C quoted word; in TTY mode a long one is assembled in a
/// variable over several lines, each under the terminal's line limit.
pub(super) fn command_lines(token: &str, cmd: &str, tty: bool) -> Vec<u8> {
    let pieces = quote_pieces(cmd);
    let total: usize = pieces.iter().map(String::len).sum();
    if !tty || total <= TTY_LINE {
        return format!(
            "__pd_begin {token}; eval $'{}' </dev/null\n",
            pieces.concat()
        )
        .into_bytes();
    }
    let mut out = String::from("__pd_s=$? __pd_c=''\n");
    let mut chunk = String::new();
    for p in pieces {
        if chunk.len() + p.len() > TTY_LINE {
            let _ = writeln!(out, "__pd_c+=$'{chunk}'");
            chunk.clear();
        }
        chunk.push_str(&p);
    }
    let _ = writeln!(out, "__pd_c+=$'{chunk}'");
    let _ = writeln!(
        out,
        "__pd_begin {token} \"$__pd_s\"; eval \"$__pd_c\" </dev/null"
    );
    out.into_bytes()
}

/// `cmd` as the inside of `$'...'`, one piece per character: printable
/// ASCII and non-ASCII as is, quote and backslash escaped, control bytes as
/// `\xHH` (so the line holds no byte a terminal would act on).
fn quote_pieces(cmd: &str) -> Vec<String> {
    cmd.chars()
        .map(|c| match c {
            '\\' => "\\\\".to_string(),
            '\'' => "\\'".to_string(),
            c if (c as u32) < 0x20 || c == '\x7f' => format!("\\x{:02x}", c as u32),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_leaves_nothing_for_a_terminal_or_the_shell() {
        assert_eq!(
            quote_pieces("a'b\\c\n\x03é").concat(),
            "a\\'b\\\\c\\x0a\\x03é"
        );
        let long = "echo x; ".repeat(1000);
        let lines = String::from_utf8(command_lines("t", &long, true)).unwrap();
        assert!(lines.lines().all(|l| l.len() < 4000));
        assert!(lines.ends_with("eval \"$__pd_c\" </dev/null\n"));
        let one = String::from_utf8(command_lines("t", "ls", false)).unwrap();
        assert_eq!(one, "__pd_begin t; eval $'ls' </dev/null\n");
    }
}
