//! What a session's output callbacks see: the shell's output without the
//! sentinels pocketdock prints around each command (see the module notes of
//! [`super`]). One [`Quiet`] per stream.
//!
//! A sentinel is `__PD_<16 hex>_BEGIN__`, `_END_<code>__` or `_READY_<pid>__`
//! at the end of a line (a TTY prompt may precede it on the same line): the
//! sentinel and its line end are dropped, what precedes it is kept. A
//! partial line that may still grow into one is held until its line ends.
//! The end sentinel prints a newline of its own first; while a command is
//! waited for, each line end is held until the next line shows it is not
//! that newline.

/// The sentinel filter of one stream.
#[derive(Debug, Default)]
pub(super) struct Quiet {
    /// The start of a line not yet shown: it may be a sentinel.
    pending: Vec<u8>,
    /// A line end held back: it may be the end sentinel's own newline.
    held: Vec<u8>,
}

/// Longest a sentinel line is: held past this, a partial line is no sentinel.
const MAX_SENTINEL: usize = 96;
const PREFIX: &[u8] = b"__PD_";

impl Quiet {
    /// Feed `data`; what may be shown now. `waiting`: a command is being
    /// waited for, so an end sentinel may follow.
    pub(super) fn feed(&mut self, data: &[u8], waiting: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if !waiting {
            out.append(&mut self.held);
        }
        self.pending.extend_from_slice(data);
        while let Some(nl) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=nl).collect();
            self.line(&line, waiting, &mut out);
        }
        let mut shown = partial_sentinel_start(&self.pending);
        if self.pending.len() - shown > MAX_SENTINEL {
            shown = self.pending.len();
        }
        if shown > 0 {
            out.append(&mut self.held);
            out.extend(self.pending.drain(..shown));
        }
        out
    }

    fn line(&mut self, line: &[u8], waiting: bool, out: &mut Vec<u8>) {
        let body_len = line.len() - if line.ends_with(b"\r\n") { 2 } else { 1 };
        let (body, end) = line.split_at(body_len);
        if let Some((start, is_end)) = sentinel_at_end(body) {
            if is_end && start == 0 {
                // The newline before it was the sentinel's.
                self.held.clear();
            } else {
                out.append(&mut self.held);
            }
            out.extend_from_slice(&body[..start]);
        } else {
            out.append(&mut self.held);
            out.extend_from_slice(body);
            if waiting {
                self.held = end.to_vec();
            } else {
                out.extend_from_slice(end);
            }
        }
    }
}

/// Where a sentinel ends `body`, and whether it is an end sentinel.
fn sentinel_at_end(body: &[u8]) -> Option<(usize, bool)> {
    let start = find_last(body, PREFIX)?;
    let rest = std::str::from_utf8(&body[start + PREFIX.len()..]).ok()?;
    let rest = rest.strip_suffix("__")?;
    let (token, kind) = rest.split_at_checked(16)?;
    if !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let number = |s: &str| {
        let s = s.strip_prefix('-').unwrap_or(s);
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    };
    if kind == "_BEGIN" {
        Some((start, false))
    } else if let Some(code) = kind.strip_prefix("_END_") {
        number(code).then_some((start, true))
    } else if let Some(pid) = kind.strip_prefix("_READY_") {
        number(pid).then_some((start, false))
    } else {
        None
    }
}

/// How much of the partial line `p` can be shown: up to where a sentinel
/// may be starting (all of it when none may).
fn partial_sentinel_start(p: &[u8]) -> usize {
    if let Some(start) = find_last(p, PREFIX) {
        let tail = &p[start..];
        if tail
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return start;
        }
    }
    // A tail that is the beginning of the prefix.
    (1..PREFIX.len())
        .rev()
        .find(|&n| p.len() >= n && p.ends_with(&PREFIX[..n]))
        .map_or(p.len(), |n| p.len() - n)
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOK: &str = "0123456789abcdef";

    fn through(pieces: &[&[u8]], waiting: bool) -> String {
        let mut q = Quiet::default();
        let mut out = Vec::new();
        for p in pieces {
            out.extend(q.feed(p, waiting));
        }
        out.extend(q.feed(b"", false));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn sentinels_and_their_newline_are_dropped_byte_by_byte() {
        let stream = format!("__PD_{TOK}_BEGIN__\n/tmp\n\n__PD_{TOK}_END_0__\nafter\n");
        let whole = through(&[stream.as_bytes()], true);
        assert_eq!(whole, "/tmp\nafter\n");
        let bytes: Vec<&[u8]> = stream.as_bytes().chunks(1).collect();
        assert_eq!(through(&bytes, true), "/tmp\nafter\n");
    }

    #[test]
    fn a_tty_prompt_before_a_sentinel_stays() {
        let stream = format!("~ $ __PD_{TOK}_BEGIN__\r\nhi\r\n\r\n__PD_{TOK}_END_3__\r\n~ $ ");
        assert_eq!(through(&[stream.as_bytes()], true), "~ $ hi\r\n~ $ ");
    }

    #[test]
    fn output_without_a_newline_keeps_none_and_lookalikes_pass() {
        let stream = format!("abc\n__PD_{TOK}_END_1__\n");
        assert_eq!(through(&[stream.as_bytes()], true), "abc");
        let fake = "__PD_nothex_END_0__\n__PD_\n";
        assert_eq!(through(&[fake.as_bytes()], false), fake);
    }

    #[test]
    fn output_outside_a_command_is_not_held() {
        let mut q = Quiet::default();
        assert_eq!(q.feed(b"line\n", false), b"line\n");
        assert_eq!(q.feed(b"Password: ", false), b"Password: ");
        assert_eq!(q.feed(b"x__P", false), b"x");
        assert_eq!(q.feed(b"ython\n", false), b"__Python\n");
    }
}
