//! The parser: recursive descent over `&str` with winnow.
//!
//! Every failure is a cut error carrying its message, raised with the input positioned at
//! the offending token (whitespace and comments already skipped), so the offset winnow
//! reports is exactly where the caret goes. Semantic checks (a size over Cannyls' limit, a
//! percentage over 100, a number over `u64::MAX`, `l > r`) rewind to the start of the
//! offending number first. A missing `;` is reported just after the previous token, where
//! the `;` belongs (the message still names the token found instead).
//!
//! Lexical rules (where `docs/DSL.md` is silent): whitespace and `#` comments may appear
//! between any two tokens; a token is a word (`New`, `times`, …), a number, a size (digits
//! and an optional `K`/`M`/`G` directly after them, no space), or one punctuation
//! character. So `Seed : 1;`, `< 50 % >` and `5000 .times` are accepted, `256 K` is not.
//! The `;` after a closing `}` is optional everywhere: the grammar requires one after
//! `N.times { … }` and after `<p%> { … }` (it may be left out), and allows none after a
//! section's `}` (one is tolerated).

use std::fmt;

use winnow::ascii::digit1;
use winnow::combinator::opt;
use winnow::error::{ContextError, ErrMode, FromExternalError};
use winnow::token::{one_of, take_while};
use winnow::{ModalResult, Parser};

use super::ast::{Command, Section, Weighted, Workload, MAX_EMBED_SIZE, MAX_PUT_SIZE};
use super::error::ParseError;

/// How deeply `{ … }` blocks may nest (a section's own braces count as one). Keeps the
/// recursive parser and generator far from the end of the stack on hostile input.
pub const MAX_NESTING: usize = 64;

type Input<'a> = &'a str;

/// Parses workload text. `file` is only used in the error.
pub fn parse(file: &str, src: &str) -> Result<Workload, ParseError> {
    workload.parse(src).map_err(|e| {
        let message = match e.inner().cause() {
            Some(cause) => cause.to_string(),
            None => "syntax error".to_string(),
        };
        ParseError::at(file, src, e.offset(), message)
    })
}

/// Parses workload bytes, which must be UTF-8 (an error points at the first bad byte).
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<Workload, ParseError> {
    match std::str::from_utf8(bytes) {
        Ok(src) => parse(file, src),
        Err(e) => Err(ParseError::not_utf8(file, bytes, &e)),
    }
}

/// The message of a parse failure (the `cause` of winnow's `ContextError`).
#[derive(Debug)]
struct Msg(String);

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Msg {}

/// Fails here (wherever the input now is) with `message`; never backtracks.
fn fail<T>(message: impl Into<String>) -> ModalResult<T> {
    Err(ErrMode::Cut(ContextError::from_external_error(
        &"",
        Msg(message.into()),
    )))
}

/// Fails with "expected WHAT, found …" describing the token at the input.
fn expected<T>(i: &Input<'_>, what: &str) -> ModalResult<T> {
    fail(format!("expected {what}, found {}", found(i)))
}

/// Describes the token at the start of `i` for a message.
fn found(i: &str) -> String {
    const MAX: usize = 40;
    let Some(c) = i.chars().next() else {
        return "end of file".to_string();
    };
    let token: String = if c.is_ascii_alphanumeric() || c == '_' {
        i.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(MAX)
            .collect()
    } else {
        c.escape_debug().collect()
    };
    format!("`{token}`")
}

/// Skips whitespace and `#` comments (to the end of the line).
fn ws(i: &mut Input<'_>) -> ModalResult<()> {
    loop {
        take_while(0.., |c: char| c.is_whitespace() || c == '\u{feff}').parse_next(i)?;
        if opt('#').parse_next(i)?.is_none() {
            return Ok(());
        }
        take_while(0.., |c: char| c != '\n').parse_next(i)?;
    }
}

/// Consumes whitespace and `c` if `c` is next after the whitespace; else consumes nothing.
fn eat(i: &mut Input<'_>, c: char) -> ModalResult<bool> {
    let before = *i;
    ws(i)?;
    if opt(c).parse_next(i)?.is_some() {
        Ok(true)
    } else {
        *i = before;
        Ok(false)
    }
}

/// Requires `c` next (after whitespace).
fn punct(i: &mut Input<'_>, c: char, what: &str) -> ModalResult<()> {
    if eat(i, c)? {
        return Ok(());
    }
    ws(i)?;
    expected(i, what)
}

/// Requires a terminating `;` next (after whitespace). When it is missing, the error points
/// just after the previous token (where the `;` belongs, as compilers do), not at whatever
/// follows on a later line.
fn semicolon(i: &mut Input<'_>, what: &str) -> ModalResult<()> {
    let after_previous = *i;
    if eat(i, ';')? {
        return Ok(());
    }
    ws(i)?;
    let message = format!("expected {what}, found {}", found(i));
    *i = after_previous;
    fail(message)
}

/// A word: an ASCII letter, then letters, digits and `_`. Backtracks if there is none.
fn word<'a>(i: &mut Input<'a>) -> ModalResult<&'a str> {
    (
        one_of(|c: char| c.is_ascii_alphabetic()),
        take_while(0.., |c: char| c.is_ascii_alphanumeric() || c == '_'),
    )
        .take()
        .parse_next(i)
}

/// The word next (after whitespace), without consuming it.
fn peek_word<'a>(i: &mut Input<'a>) -> ModalResult<Option<&'a str>> {
    ws(i)?;
    let mut look = *i;
    opt(word).parse_next(&mut look)
}

/// A decimal number (after whitespace) that fits a `u64`.
fn number(i: &mut Input<'_>, what: &str) -> ModalResult<u64> {
    ws(i)?;
    let start = *i;
    let Some(digits) = opt(digit1).parse_next(i)? else {
        return expected(i, what);
    };
    match digits.parse::<u64>() {
        Ok(n) => Ok(n),
        Err(_) => {
            *i = start;
            fail(format!(
                "number `{}` is too large (the largest is {})",
                shorten(digits),
                u64::MAX
            ))
        }
    }
}

fn shorten(s: &str) -> String {
    if s.len() > 30 {
        format!("{}…", &s[..30])
    } else {
        s.to_string()
    }
}

/// A percentage, 0–100.
fn percent(i: &mut Input<'_>) -> ModalResult<u8> {
    ws(i)?;
    let start = *i;
    let n = number(i, "a percentage (0 to 100)")?;
    match u8::try_from(n) {
        Ok(p) if p <= 100 => Ok(p),
        _ => {
            *i = start;
            fail(format!("a percentage must be 0 to 100, found {n}"))
        }
    }
}

/// A size: a number, optionally followed directly by `K`, `M` or `G` (powers of 1024),
/// at most `limit` bytes.
fn size(i: &mut Input<'_>, command: &str, limit: u32, why: &str) -> ModalResult<u32> {
    ws(i)?;
    let start = *i;
    let n = number(i, "a size (bytes, or a number with K, M or G)")?;
    let unit: u64 = match i.chars().next() {
        Some('K') => 1 << 10,
        Some('M') => 1 << 20,
        Some('G') => 1 << 30,
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
            return fail(format!(
                "unknown size suffix `{c}` (expected K, M or G, powers of 1024)"
            ));
        }
        _ => 1,
    };
    if unit != 1 {
        // `1MB`, `1MiB`: the command-line units, which the workload language does not take
        // (cannyls_bencher's sizes are K, M, G): named, rather than "expected `)`".
        let mut rest = i.chars();
        let unit_char = rest.next().unwrap_or_default();
        if let Some(c) = rest
            .next()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            return fail(format!(
                "unknown size suffix `{unit_char}{c}…` (expected K, M or G, powers of 1024: the \
                 workload language has no KB, MB, GB or KiB, MiB, GiB)"
            ));
        }
        *i = &i[1..];
    }
    let text = &start[..start.len() - i.len()];
    let bytes = n.checked_mul(unit);
    if let Some(ok) = bytes
        .and_then(|b| u32::try_from(b).ok())
        .filter(|&b| b <= limit)
    {
        return Ok(ok);
    }
    *i = start;
    let bytes = match bytes {
        Some(b) if unit != 1 => format!(" ({b} bytes)"),
        _ => String::new(),
    };
    fail(format!(
        "`{command}` size {}{bytes} is over the limit of {limit} bytes ({why})",
        shorten(text)
    ))
}

/// `(l, r)`, with l ≤ r. The `(` must already be consumed.
fn bounds(i: &mut Input<'_>) -> ModalResult<(u8, u8)> {
    ws(i)?;
    let start = *i;
    let l = percent(i)?;
    punct(i, ',', "`,`")?;
    let r = percent(i)?;
    punct(i, ')', "`)`")?;
    if l > r {
        *i = start;
        return fail(format!(
            "the range {l}%..{r}% is backwards: the first percentage must not be larger than the second"
        ));
    }
    Ok((l, r))
}

/// One command (after whitespace). `what` says what was expected here, for the error.
fn command(i: &mut Input<'_>, depth: usize, what: &str) -> ModalResult<Command> {
    ws(i)?;
    if i.starts_with(|c: char| c.is_ascii_digit()) {
        return times(i, depth);
    }
    let start = *i;
    let Some(name) = opt(word).parse_next(i)? else {
        return expected(i, what);
    };
    let put_why = "0xFFFF × 512 − 2, the largest Cannyls lump";
    let command = match name {
        "New" => {
            punct(i, '(', "`(` after `New`")?;
            let n = size(i, "New", MAX_PUT_SIZE, put_why)?;
            punct(i, ')', "`)`")?;
            Command::New(n)
        }
        "OverWrite" => {
            punct(i, '(', "`(` after `OverWrite`")?;
            let n = size(i, "OverWrite", MAX_PUT_SIZE, put_why)?;
            punct(i, ')', "`)`")?;
            Command::OverWrite(n)
        }
        "Embed" => {
            punct(i, '(', "`(` after `Embed`")?;
            let n = size(i, "Embed", MAX_EMBED_SIZE, "the largest embedded lump")?;
            punct(i, ')', "`)`")?;
            Command::Embed(n)
        }
        "Get" => {
            if eat(i, '(')? {
                let (l, r) = bounds(i)?;
                Command::GetAt(l, r)
            } else {
                Command::Get
            }
        }
        "Delete" => {
            if eat(i, '(')? {
                let (l, r) = bounds(i)?;
                Command::DeleteAt(l, r)
            } else {
                Command::Delete
            }
        }
        "DeleteRange" => {
            punct(i, '(', "`(` after `DeleteRange`")?;
            let (l, r) = bounds(i)?;
            Command::DeleteRange(l, r)
        }
        "Sync" => Command::Sync,
        _ => {
            *i = start;
            return expected(i, what);
        }
    };
    Ok(command)
}

/// `N.times { … }` (the input is at N).
fn times(i: &mut Input<'_>, depth: usize) -> ModalResult<Command> {
    let start = *i;
    let count = number(i, "a repeat count")?;
    punct(i, '.', "`.times` after the count")?;
    if peek_word(i)? != Some("times") {
        return expected(i, "`times`");
    }
    word.parse_next(i)?;
    punct(i, '{', "`{` after `.times`")?;
    if depth + 1 > MAX_NESTING {
        *i = start;
        return fail(format!("blocks are nested more than {MAX_NESTING} deep"));
    }
    let body = command_list(i, depth + 1)?;
    Ok(Command::Times { count, body })
}

/// `(command ";")* "}"` — the `{` is already consumed; consumes the `}`.
fn command_list(i: &mut Input<'_>, depth: usize) -> ModalResult<Vec<Command>> {
    let mut commands = Vec::new();
    loop {
        if eat(i, '}')? {
            return Ok(commands);
        }
        let command = command(i, depth, "a command or `}`")?;
        let block = matches!(command, Command::Times { .. });
        commands.push(command);
        if block {
            eat(i, ';')?;
        } else {
            semicolon(i, "`;` after the command")?;
        }
    }
}

/// `weighted* "}"` — the `{` is already consumed; consumes the `}`.
fn weighted_list(i: &mut Input<'_>) -> ModalResult<Vec<Weighted>> {
    let mut items = Vec::new();
    loop {
        if eat(i, '}')? {
            return Ok(items);
        }
        punct(i, '<', "a weighted item `<p%> …` or `}`")?;
        let percent = percent(i)?;
        punct(i, '%', "`%`")?;
        punct(i, '>', "`>` after `%`")?;
        if eat(i, '{')? {
            let body = command_list(i, 2)?;
            eat(i, ';')?;
            items.push(Weighted {
                percent,
                body,
                braced: true,
            });
        } else {
            let command = command(i, 1, "a command or `{`")?;
            if matches!(command, Command::Times { .. }) {
                eat(i, ';')?;
            } else {
                semicolon(i, "`;` after the command")?;
            }
            items.push(Weighted {
                percent,
                body: vec![command],
                braced: false,
            });
        }
    }
}

const SECTION: &str = "a section (`Command {`, `Ordered[N] {` or `Unordered[N] {`)";

fn section(i: &mut Input<'_>) -> ModalResult<Section> {
    ws(i)?;
    let start = *i;
    let name = opt(word).parse_next(i)?;
    let section = match name {
        Some("Command") => {
            punct(i, '{', "`{` after `Command`")?;
            Section::Command(command_list(i, 1)?)
        }
        Some(name @ ("Ordered" | "Unordered")) => {
            punct(i, '[', &format!("`[` after `{name}`"))?;
            let count = number(i, "a count")?;
            punct(i, ']', "`]`")?;
            punct(i, '{', "`{`")?;
            let items = weighted_list(i)?;
            if name == "Ordered" {
                Section::Ordered { count, items }
            } else {
                Section::Unordered { count, items }
            }
        }
        Some("Seed") => {
            *i = start;
            return fail("`Seed:` must come before the first section");
        }
        _ => {
            *i = start;
            return expected(i, SECTION);
        }
    };
    eat(i, ';')?;
    Ok(section)
}

fn workload(i: &mut Input<'_>) -> ModalResult<Workload> {
    let seed = if peek_word(i)? == Some("Seed") {
        word.parse_next(i)?;
        punct(i, ':', "`:` after `Seed`")?;
        let seed = number(i, "a seed (a number)")?;
        semicolon(i, "`;` after the seed")?;
        Some(seed)
    } else {
        None
    };
    let mut sections = Vec::new();
    loop {
        ws(i)?;
        if i.is_empty() {
            break;
        }
        if sections.is_empty() && seed.is_some() && peek_word(i)? == Some("Seed") {
            return fail("a second `Seed:`; a workload has at most one");
        }
        sections.push(section(i)?);
    }
    if sections.is_empty() {
        return expected(i, SECTION);
    }
    Ok(Workload { seed, sections })
}
