//! Parse errors with a position, rendered like a compiler's.

use std::fmt;

/// A workload file that does not parse: where and why.
///
/// [`Display`](fmt::Display) renders it as
///
/// ```text
/// FILE:LINE:COL: message
/// <the source line>
/// <spaces up to the column>^
/// ```
///
/// LINE and COL are 1-based; COL counts characters (a tab is one column; the caret line
/// copies the tabs of the source line so that it stays aligned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The file name as given (used only for display).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong, e.g. ``expected `;` after a command, found `}` ``.
    pub message: String,
    /// The text of the line the error is on, without its line ending.
    pub source_line: String,
}

impl ParseError {
    /// An error at byte `offset` of `src` (clamped into `src` and back to a character
    /// boundary, so any offset is safe).
    pub fn at(file: &str, src: &str, offset: usize, message: impl Into<String>) -> Self {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &src[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = before.matches('\n').count() + 1;
        let column = src[line_start..offset].chars().count() + 1;
        let rest = &src[line_start..];
        let line_text = rest.split('\n').next().unwrap_or("");
        let line_text = line_text.strip_suffix('\r').unwrap_or(line_text);
        ParseError {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
            source_line: line_text.to_string(),
        }
    }

    /// An error for a file that is not UTF-8: positioned at the first invalid byte.
    pub fn not_utf8(file: &str, bytes: &[u8], error: &std::str::Utf8Error) -> Self {
        let valid = &bytes[..error.valid_up_to().min(bytes.len())];
        // `valid` is UTF-8 by definition of `valid_up_to`; the rest of the line is shown lossily.
        let mut text = String::from_utf8_lossy(valid).into_owned();
        let offset = text.len();
        let rest = &bytes[valid.len()..];
        let line_rest = rest.split(|&b| b == b'\n').next().unwrap_or(&[]);
        text.push_str(&String::from_utf8_lossy(line_rest));
        ParseError::at(file, &text, offset, "the file is not valid UTF-8")
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )?;
        // Control characters (a binary file's, an escape sequence) are shown as U+FFFD, one
        // column each like the character they stand for, rather than sent to the terminal.
        let shown: String = self
            .source_line
            .chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        writeln!(f, "{shown}")?;
        let pad: String = self
            .source_line
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "{pad}^")
    }
}

impl std::error::Error for ParseError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_rendering() {
        let src = "Command {\n  New(1)\n}\n";
        let e = ParseError::at("a.wl", src, src.find("\n}").unwrap() + 1, "expected `;`");
        assert_eq!((e.line, e.column), (3, 1));
        assert_eq!(e.to_string(), "a.wl:3:1: expected `;`\n}\n^");

        let e = ParseError::at("a.wl", "\tNé(", 4, "m");
        assert_eq!((e.line, e.column), (1, 4));
        assert_eq!(e.to_string(), "a.wl:1:4: m\n\tNé(\n\t  ^");
    }

    /// Regression: the line of a binary or escape-laden workload was echoed raw, control
    /// characters and all, onto the user's terminal.
    #[test]
    fn control_characters_of_the_echoed_line_are_not_printed_raw() {
        let e = ParseError::at("b.wl", "\u{1b}[31mNew\u{7}\tX;", 10, "m");
        assert_eq!(e.column, 11);
        assert_eq!(
            e.to_string(),
            "b.wl:1:11: m\n\u{FFFD}[31mNew\u{FFFD}\tX;\n         \t^"
        );
    }

    #[test]
    fn offsets_out_of_range_or_inside_a_character_are_safe() {
        let e = ParseError::at("f", "é", 1, "m");
        assert_eq!((e.line, e.column), (1, 1));
        let e = ParseError::at("f", "ab\r\n", 99, "m");
        assert_eq!((e.line, e.column, e.source_line.as_str()), (2, 1, ""));
        let e = ParseError::at("f", "ab\r\ncd", 1, "m");
        assert_eq!(e.source_line, "ab");
    }

    #[test]
    fn invalid_utf8_points_at_the_bad_byte() {
        let bytes: &[u8] = &[b"Command {\n  Ne".as_slice(), &[0xff], b"w(1);\n}"].concat();
        let err = std::str::from_utf8(bytes).unwrap_err();
        let e = ParseError::not_utf8("x.wl", bytes, &err);
        assert_eq!((e.line, e.column), (2, 5));
        assert_eq!(e.source_line, "  Ne\u{fffd}w(1);");
    }
}
