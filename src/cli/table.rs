//! Aligned tables and human durations for terminal output. Widths are
//! measured on the plain text and styles added after padding, so colour
//! never shifts a column.

use super::style;

/// Render rows under headers, columns padded to the widest cell.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    render_styled(headers, rows, None)
}

/// As [`render`], with bold headers and the cells of column `status_col`
/// coloured by their status word (print it through `anstream`).
pub fn render_status(headers: &[&str], rows: &[Vec<String>], status_col: usize) -> String {
    render_styled(headers, rows, Some(status_col))
}

fn render_styled(headers: &[&str], rows: &[Vec<String>], status_col: Option<usize>) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>, header: bool| {
        let mut l = String::new();
        for (i, cell) in cells.enumerate() {
            let styled = match status_col {
                Some(_) if header => style::paint(style::HEADER, cell),
                Some(c) if c == i => style::paint(style::status(cell), cell),
                _ => cell.to_string(),
            };
            l.push_str(&styled);
            // Padding stays outside the escapes.
            if i + 1 < widths.len() {
                let pad = widths[i].saturating_sub(cell.chars().count()) + 2;
                l.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied(), true);
    for row in rows {
        line(&mut row.iter().map(String::as_str), false);
    }
    out
}

/// `45s`, `12m`, `3h`, `2d`.
pub fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let t = render(
            &["NAME", "STATUS"],
            &[
                vec!["a".into(), "running".into()],
                vec!["long-name".into(), "exited".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME       STATUS\na          running\nlong-name  exited\n"
        );
    }

    #[test]
    fn colour_does_not_shift_columns() {
        let rows = [vec!["a".into(), "running".into(), "x".into()]];
        let t = render_status(&["NAME", "STATUS", "IMAGE"], &rows, 1);
        assert_eq!(
            t,
            "\u{1b}[1mNAME\u{1b}[0m  \u{1b}[1mSTATUS\u{1b}[0m   \u{1b}[1mIMAGE\u{1b}[0m\n\
             a     \u{1b}[32mrunning\u{1b}[0m  x\n"
        );
        let plain = render(&["NAME", "STATUS", "IMAGE"], &rows);
        assert_eq!(plain, "NAME  STATUS   IMAGE\na     running  x\n");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(125), "2m");
        assert_eq!(duration(7200), "2h");
        assert_eq!(duration(200_000), "2d");
    }
}
