//! Block traces as tracefs writes them: the text of `trace` (or `trace_pipe`) with
//! `trace_clock` = `mono` and the events `block/block_rq_issue` and `block/block_rq_complete`
//! enabled.
//!
//! Lines as Linux 6.18 prints them (the default `trace` options; `trace_pipe` is the same
//! without the `#` header):
//!
//! ```text
//!      minfs-bench-4256    [000] .....  3282.068825: block_rq_issue: 7,0 WS 262656 () 780 + 513 be,0,4 [minfs-bench]
//!      ksoftirqd/0-14      [000] ..s..  3282.072107: block_rq_complete: 7,0 WS () 780 + 513 be,0,4 [0]
//!     kworker/0:1H-44      [000] .....  3282.064148: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
//!      ksoftirqd/0-14      [000] ..s..  3282.064450: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
//! ```
//!
//! That is `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: MAJOR,MINOR RWBS [BYTES] (CMD)
//! SECTOR + NR_SECTORS [IOPRIO] [COMM or ERROR]`: an issue gives the request's bytes and the
//! issuing task, a completion the error code. Sectors are 512-byte units whatever the
//! device's sector size. The time is the `mono` trace clock (CLOCK_MONOTONIC), in seconds with
//! microseconds.
//!
//! RWBS is the kernel's `blk_fill_rwbs`: an optional `F` (preflush), then the operation (`R`
//! read, `W` write, `D` discard, `DE` secure erase, `F` flush, `N` anything else), then flags:
//! `F` FUA, `A` read-ahead, `S` sync, `M` metadata, `U` atomic.
//!
//! What the parser does:
//! - `#` lines and blank lines are skipped; so are other events (`block_rq_insert`,
//!   `block_bio_queue`, `block_rq_merge`, …) — a request that absorbed others by merging is
//!   issued once with its final size, so the issue line already covers it.
//! - A `CPU:N [LOST M EVENTS]` line (the ring buffer overflowed) is an error: pairing would be
//!   wrong. A line that is not a trace line, or a block_rq line whose fields do not parse, is
//!   an error naming the line number and the line.
//! - Pairing: each completion is paired with the oldest unpaired issue of the same device,
//!   sector and sector count (FIFO). A flush (`FF` …) is issued with sector 0 and completes
//!   with sector 2^64 − 1, so flush completions are paired with the oldest unpaired flush issue
//!   of the device instead.
//! - A completion without an issue is counted and otherwise ignored. The kernel prints one
//!   with 0 sectors (`WS () 0 + 0`) after each flush it made for an empty preflush request
//!   (an `fsync`), which never went through `block_rq_issue`; others are requests issued
//!   before the trace started.
//! - An issue without a completion (the trace stopped before it completed) is counted and left
//!   out of the requests.
//! - The trace must hold one device, or the caller names one ([`pair`]'s `dev`).

use std::collections::{HashMap, VecDeque};
use std::fmt;

/// What a request does, from the RWBS operation letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReqOp {
    /// `R`.
    Read,
    /// `W`.
    Write,
    /// `D` (discard) or `DE` (secure erase).
    Discard,
    /// `F`: a cache flush.
    Flush,
    /// `N`: anything else (zone management, write-zeroes on some kernels, driver commands).
    Other,
}

/// A parsed RWBS string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rwbs {
    /// The operation.
    pub op: ReqOp,
    /// A leading `F` before the operation: flush the cache before this request.
    pub preflush: bool,
    /// `F` after the operation: forced unit access (on the media when it completes).
    pub fua: bool,
    /// `A`: read-ahead.
    pub readahead: bool,
    /// `S`: synchronous.
    pub sync: bool,
    /// `M`: metadata.
    pub meta: bool,
    /// `U`: atomic write.
    pub atomic: bool,
}

impl Rwbs {
    /// Parses `WS`, `FWFS`, `FF`, `RA`, `DS`, … ; `None` if it is not one.
    pub fn parse(s: &str) -> Option<Rwbs> {
        let b = s.as_bytes();
        if b.is_empty() || !b.iter().all(u8::is_ascii_uppercase) {
            return None;
        }
        let is_op = |c: u8| matches!(c, b'R' | b'W' | b'D' | b'F' | b'N');
        let mut i = 0;
        let preflush = b.len() >= 2 && b[0] == b'F' && is_op(b[1]);
        if preflush {
            i = 1;
        }
        let op = match b[i] {
            b'R' => ReqOp::Read,
            b'W' => ReqOp::Write,
            b'D' => {
                if b.get(i + 1) == Some(&b'E') {
                    i += 1;
                }
                ReqOp::Discard
            }
            b'F' => ReqOp::Flush,
            b'N' => ReqOp::Other,
            _ => return None,
        };
        i += 1;
        let mut rwbs = Rwbs {
            op,
            preflush,
            fua: false,
            readahead: false,
            sync: false,
            meta: false,
            atomic: false,
        };
        for &c in &b[i..] {
            match c {
                b'F' => rwbs.fua = true,
                b'A' => rwbs.readahead = true,
                b'S' => rwbs.sync = true,
                b'M' => rwbs.meta = true,
                b'U' => rwbs.atomic = true,
                _ => return None,
            }
        }
        Some(rwbs)
    }

    /// A flush of the cache: the `F` operation, or a preflush (`F` before the operation).
    pub fn flushes(&self) -> bool {
        self.op == ReqOp::Flush || self.preflush
    }
}

/// Issue or completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `block_rq_issue`: the request went to the driver.
    Issue,
    /// `block_rq_complete`: it completed.
    Complete,
}

/// One `block_rq_issue` or `block_rq_complete` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Line number in the file, from 1.
    pub line: usize,
    /// Issue or completion.
    pub kind: EventKind,
    /// The trace clock in nanoseconds (the text has microseconds).
    pub time_ns: u64,
    /// Device major and minor.
    pub dev: (u32, u32),
    /// The RWBS field as printed.
    pub rwbs_text: String,
    /// It parsed.
    pub rwbs: Rwbs,
    /// Bytes (issues only).
    pub bytes: Option<u64>,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Sectors.
    pub nr_sectors: u64,
    /// The bracketed last field: the issuing task (issue) or the error code (completion).
    pub last: String,
}

/// A trace that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// The line, from 1 (0: not about one line).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

fn shorten(line: &str) -> String {
    let line = line.trim();
    if line.chars().count() > 160 {
        let s: String = line.chars().take(160).collect();
        format!("{s}…")
    } else {
        line.to_string()
    }
}

/// Parses `SECONDS.FRACTION:` into nanoseconds.
fn parse_timestamp(tok: &str) -> Option<u64> {
    let t = tok.strip_suffix(':')?;
    let (secs, frac) = t.split_once('.')?;
    if secs.is_empty()
        || frac.is_empty()
        || frac.len() > 9
        || !secs.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let s: u64 = secs.parse().ok()?;
    let f: u64 = frac.parse().ok()?;
    let scale = 10u64.pow(9 - frac.len() as u32);
    s.checked_mul(1_000_000_000)?.checked_add(f * scale)
}

/// A tracefs line's time (ns), event name and payload: `TASK-PID [CPU] FLAGS SECONDS.MICROS:
/// EVENT: PAYLOAD` (the task name may contain spaces). `None` for anything else. `trimmed`
/// has no leading or trailing white space.
pub fn event_fields(trimmed: &str) -> Option<(u64, &str, &str)> {
    let mut search = trimmed;
    let mut offset = 0;
    while let Some(pos) = search.find(": ") {
        let abs = offset + pos;
        // The token ending at `abs` (inclusive of ':').
        let before = &trimmed[..abs + 1];
        let tok_start = before.rfind(char::is_whitespace).map_or(0, |p| p + 1);
        let tok = &before[tok_start..];
        if tok_start > 0 {
            if let Some(ns) = parse_timestamp(tok) {
                let after = &trimmed[abs + 2..];
                if let Some((event, payload)) = after.split_once(": ") {
                    if !event.is_empty() && !event.contains(char::is_whitespace) {
                        return Some((ns, event, payload));
                    }
                } else if let Some(event) = after.strip_suffix(':') {
                    if !event.contains(char::is_whitespace) {
                        return Some((ns, event, ""));
                    }
                }
            }
        }
        offset = abs + 2;
        search = &trimmed[offset..];
    }
    None
}

/// Parses one line: `Ok(None)` for a comment, a blank line or another event.
pub fn parse_line(text: &str, line: usize) -> Result<Option<Event>, TraceError> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    let bad = |what: &str| TraceError {
        line,
        message: format!("{what}: `{}`", shorten(text)),
    };
    if trimmed.starts_with("CPU:") && trimmed.contains("LOST") {
        return Err(bad(
            "the trace buffer overflowed and events were lost; capture again with a larger \
             buffer_size_kb",
        ));
    }
    let Some((time_ns, event, payload)) = event_fields(trimmed) else {
        return Err(bad(
            "not a tracefs line (`TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: …`)",
        ));
    };
    let kind = match event {
        "block_rq_issue" => EventKind::Issue,
        "block_rq_complete" => EventKind::Complete,
        _ => return Ok(None),
    };
    parse_payload(payload, kind, time_ns, line)
        .map_err(|what| bad(&format!("{event}: {what}")))
        .map(Some)
}

fn parse_payload(
    payload: &str,
    kind: EventKind,
    time_ns: u64,
    line: usize,
) -> Result<Event, String> {
    let mut toks = payload.split_whitespace().peekable();
    let dev_tok = toks.next().ok_or("no device")?;
    let (maj, min) = dev_tok
        .split_once(',')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| format!("device `{dev_tok}` is not MAJOR,MINOR"))?;
    let rwbs_text = toks.next().ok_or("no RWBS flags")?;
    let rwbs = Rwbs::parse(rwbs_text).ok_or_else(|| format!("`{rwbs_text}` is not RWBS flags"))?;
    let bytes = if kind == EventKind::Issue {
        let t = toks.next().ok_or("no byte count")?;
        Some(
            t.parse::<u64>()
                .map_err(|_| format!("byte count `{t}` is not a number"))?,
        )
    } else {
        None
    };
    // `(CMD)`: may be empty or hold spaces.
    if toks.peek().is_some_and(|t| t.starts_with('(')) {
        loop {
            let t = toks.next().ok_or("unclosed `(`")?;
            if t.ends_with(')') {
                break;
            }
        }
    }
    let sector_tok = toks.next().ok_or("no sector")?;
    let sector = sector_tok
        .parse::<u64>()
        .map_err(|_| format!("sector `{sector_tok}` is not a number"))?;
    if toks.next() != Some("+") {
        return Err("no `+` between the sector and the sector count".into());
    }
    let nr_tok = toks.next().ok_or("no sector count")?;
    let nr_sectors = nr_tok
        .parse::<u64>()
        .map_err(|_| format!("sector count `{nr_tok}` is not a number"))?;
    // Optional I/O priority (`be,0,4`), then `[COMM]` or `[ERROR]` to the end of the line.
    let rest: Vec<&str> = toks.collect();
    let rest = rest.join(" ");
    let bracket = rest.find('[').ok_or("no `[…]` field at the end")?;
    let prio = rest[..bracket].trim();
    if prio.contains(char::is_whitespace) {
        return Err(format!("unexpected `{prio}` before the `[…]` field"));
    }
    let last = rest[bracket + 1..]
        .strip_suffix(']')
        .ok_or("the `[…]` field is not closed")?
        .to_string();
    if kind == EventKind::Complete && last.parse::<i64>().is_err() {
        return Err(format!("error code `{last}` is not a number"));
    }
    if let Some(b) = bytes {
        if matches!(rwbs.op, ReqOp::Read | ReqOp::Write) && nr_sectors > 0 && b != nr_sectors * 512
        {
            return Err(format!(
                "{b} bytes but {nr_sectors} sectors ({} bytes)",
                nr_sectors * 512
            ));
        }
    }
    Ok(Event {
        line,
        kind,
        time_ns,
        dev: (maj, min),
        rwbs_text: rwbs_text.to_string(),
        rwbs,
        bytes,
        sector,
        nr_sectors,
        last,
    })
}

/// Parses a whole trace into its block_rq events, in file order.
pub fn parse_events(text: &str) -> Result<Vec<Event>, TraceError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(e) = parse_line(line, i + 1)? {
            events.push(e);
        }
    }
    Ok(events)
}

/// One request: an issue paired with its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The issue's line.
    pub line: usize,
    /// Its operation and flags.
    pub rwbs: Rwbs,
    /// The flags as printed.
    pub rwbs_text: String,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Sectors (512-byte units).
    pub sectors: u64,
    /// Issued (ns, trace clock).
    pub issue_ns: u64,
    /// Completed (ns, trace clock).
    pub complete_ns: u64,
    /// The completion's error code (0 = success).
    pub error: i64,
    /// The task that issued it.
    pub comm: String,
}

impl Request {
    /// Bytes it moves (0 for flushes and discards).
    pub fn data_bytes(&self) -> u64 {
        match self.rwbs.op {
            ReqOp::Read | ReqOp::Write => self.sectors * 512,
            _ => 0,
        }
    }
}

/// The requests of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The device.
    pub dev: (u32, u32),
    /// Completed requests, in the order they were issued (by time, then line).
    pub requests: Vec<Request>,
    /// Issues never completed in the trace.
    pub unmatched_issues: usize,
    /// Completions never issued in the trace (see the module documentation).
    pub unmatched_completions: usize,
    /// Of those, the 0-sector ones (the completions of empty preflush requests).
    pub unmatched_empty_completions: usize,
    /// Completions with a non-zero error code.
    pub errors: usize,
}

/// Pairs the events of the device `dev` (or of the only device in the trace).
pub fn pair(events: &[Event], dev: Option<(u32, u32)>) -> Result<Trace, TraceError> {
    let mut devices: Vec<(u32, u32)> = events.iter().map(|e| e.dev).collect();
    devices.sort_unstable();
    devices.dedup();
    let dev = match dev {
        Some(d) => {
            if !devices.contains(&d) {
                return Err(TraceError {
                    line: 0,
                    message: format!(
                        "no requests of device {},{} in the trace (devices: {})",
                        d.0,
                        d.1,
                        list_devices(&devices)
                    ),
                });
            }
            d
        }
        None => match devices.as_slice() {
            [] => {
                return Err(TraceError {
                    line: 0,
                    message: "no block_rq_issue or block_rq_complete events in the trace".into(),
                })
            }
            [d] => *d,
            _ => {
                return Err(TraceError {
                    line: 0,
                    message: format!(
                        "the trace holds requests of several devices ({}); name one with --dev \
                         MAJOR,MINOR",
                        list_devices(&devices)
                    ),
                })
            }
        },
    };

    // Pending issues, oldest first: data requests by (sector, count), flushes apart.
    #[derive(Hash, PartialEq, Eq)]
    enum Key {
        Data(u64, u64),
        Flush,
    }
    let key = |e: &Event| {
        if e.rwbs.op == ReqOp::Flush && e.nr_sectors == 0 {
            Key::Flush
        } else {
            Key::Data(e.sector, e.nr_sectors)
        }
    };
    let mut pending: HashMap<Key, VecDeque<usize>> = HashMap::new();
    let mut paired: Vec<Option<(u64, i64)>> = Vec::new();
    let mut issues: Vec<&Event> = Vec::new();
    let mut unmatched_completions = 0;
    let mut unmatched_empty = 0;
    let mut errors = 0;
    for e in events.iter().filter(|e| e.dev == dev) {
        match e.kind {
            EventKind::Issue => {
                pending.entry(key(e)).or_default().push_back(issues.len());
                issues.push(e);
                paired.push(None);
            }
            EventKind::Complete => {
                let error: i64 = e.last.parse().unwrap_or(0);
                match pending.get_mut(&key(e)).and_then(VecDeque::pop_front) {
                    Some(i) => {
                        if e.time_ns < issues[i].time_ns {
                            return Err(TraceError {
                                line: e.line,
                                message: format!(
                                    "completes before its issue (line {}): is the trace in time \
                                     order?",
                                    issues[i].line
                                ),
                            });
                        }
                        paired[i] = Some((e.time_ns, error));
                        if error != 0 {
                            errors += 1;
                        }
                    }
                    None => {
                        unmatched_completions += 1;
                        if e.nr_sectors == 0 {
                            unmatched_empty += 1;
                        }
                    }
                }
            }
        }
    }
    let mut requests = Vec::new();
    let mut unmatched_issues = 0;
    for (e, p) in issues.iter().zip(&paired) {
        match p {
            Some((complete_ns, error)) => requests.push(Request {
                line: e.line,
                rwbs: e.rwbs.clone(),
                rwbs_text: e.rwbs_text.clone(),
                sector: e.sector,
                sectors: e.nr_sectors,
                issue_ns: e.time_ns,
                complete_ns: *complete_ns,
                error: *error,
                comm: e.last.clone(),
            }),
            None => unmatched_issues += 1,
        }
    }
    // tracefs merges the per-CPU buffers by time; keep that order (stable on ties).
    requests.sort_by_key(|r| (r.issue_ns, r.line));
    Ok(Trace {
        dev,
        requests,
        unmatched_issues,
        unmatched_completions,
        unmatched_empty_completions: unmatched_empty,
        errors,
    })
}

fn list_devices(devices: &[(u32, u32)]) -> String {
    devices
        .iter()
        .map(|(a, b)| format!("{a},{b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`parse_events`] then [`pair`].
pub fn parse(text: &str, dev: Option<(u32, u32)>) -> Result<Trace, TraceError> {
    pair(&parse_events(text)?, dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs() {
        let r = Rwbs::parse("WS").unwrap();
        assert_eq!(
            (r.op, r.sync, r.fua, r.preflush),
            (ReqOp::Write, true, false, false)
        );
        let r = Rwbs::parse("FWFSM").unwrap();
        assert!(r.preflush && r.fua && r.sync && r.meta && r.op == ReqOp::Write);
        let r = Rwbs::parse("FF").unwrap();
        assert!(r.op == ReqOp::Flush && r.flushes());
        let r = Rwbs::parse("F").unwrap();
        assert!(r.op == ReqOp::Flush && !r.preflush);
        let r = Rwbs::parse("RA").unwrap();
        assert!(r.op == ReqOp::Read && r.readahead && !r.flushes());
        assert_eq!(Rwbs::parse("DE").unwrap().op, ReqOp::Discard);
        assert_eq!(Rwbs::parse("DS").unwrap().op, ReqOp::Discard);
        assert_eq!(Rwbs::parse("N").unwrap().op, ReqOp::Other);
        assert!(Rwbs::parse("WFU").unwrap().atomic);
        for bad in ["", "ws", "X", "WX", "W S"] {
            assert_eq!(Rwbs::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("3085.302634:"), Some(3_085_302_634_000));
        assert_eq!(parse_timestamp("1.5:"), Some(1_500_000_000));
        assert_eq!(parse_timestamp("1.000000001:"), Some(1_000_000_001));
        for bad in ["3085:", "3085.30263", ".5:", "1.:", "a.1:", "1.0000000001:"] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn lines() {
        let e = parse_line(
            "     minfs-bench-4256    [001] .....  3282.068825: block_rq_issue: 7,0 WS 262656 () \
             780 + 513 be,0,4 [minfs-bench]",
            3,
        )
        .unwrap()
        .unwrap();
        assert_eq!(e.kind, EventKind::Issue);
        assert_eq!(e.time_ns, 3_282_068_825_000);
        assert_eq!(
            (e.dev, e.sector, e.nr_sectors, e.bytes),
            ((7, 0), 780, 513, Some(262_656))
        );
        assert_eq!(e.last, "minfs-bench");
        // A task name with a space, a completion.
        let e = parse_line(
            "       opt cgu.0-4278    [001] ..s..  3283.011316: block_rq_complete: 7,0 R () 6716 \
             + 989 be,0,4 [0]",
            4,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (e.kind, e.sector, e.nr_sectors, e.bytes),
            (EventKind::Complete, 6716, 989, None)
        );
        // A flush completion's sector is 2^64 − 1.
        let e = parse_line(
            " ksoftirqd/0-14 [000] ..s.. 3282.064450: block_rq_complete: 7,0 FF () \
             18446744073709551615 + 0 none,0,0 [0]",
            5,
        )
        .unwrap()
        .unwrap();
        assert_eq!((e.sector, e.rwbs.op), (u64::MAX, ReqOp::Flush));
        // Other events and comments are skipped.
        for skip in [
            "# tracer: nop",
            "",
            "   dd-1 [000] ..... 1.000001: block_rq_insert: 7,0 WS 4096 () 0 + 8 be,0,4 [dd]",
            "   dd-1 [000] ..... 1.000001: block_rq_merge: 7,0 WS 4096 () 0 + 8 be,0,4 [dd]",
        ] {
            assert_eq!(parse_line(skip, 1).unwrap(), None, "{skip}");
        }
        // Old formats without the I/O priority still parse.
        let e = parse_line(
            "dd-1 [000] .... 1.000001: block_rq_issue: 8,16 W 4096 () 8 + 8 [dd]",
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!((e.dev, e.sector), ((8, 16), 8));
    }

    #[test]
    fn malformed_lines_name_the_line() {
        for (line, want) in [
            ("garbage", "not a tracefs line"),
            (
                "dd-1 [000] ..... 1.000001: block_rq_issue: 7,0 WS 4096 () 0 + [dd]",
                "sector count `[dd]` is not a number",
            ),
            (
                "dd-1 [000] ..... 1.000001: block_rq_issue: 7,0 ws 4096 () 0 + 8 [dd]",
                "`ws` is not RWBS flags",
            ),
            (
                "dd-1 [000] ..... 1.000001: block_rq_issue: 7:0 WS 4096 () 0 + 8 [dd]",
                "device `7:0` is not MAJOR,MINOR",
            ),
            (
                "dd-1 [000] ..... 1.000001: block_rq_issue: 7,0 WS 4096 () 0 + 8 be,0,4 [dd",
                "not closed",
            ),
            (
                "dd-1 [000] ..... 1.000001: block_rq_issue: 7,0 WS 4000 () 0 + 8 be,0,4 [dd]",
                "4000 bytes but 8 sectors",
            ),
            (
                "ks-1 [000] ..... 1.000001: block_rq_complete: 7,0 WS () 0 + 8 be,0,4 [x]",
                "error code `x`",
            ),
            ("CPU:1 [LOST 1234 EVENTS]", "events were lost"),
        ] {
            let e = parse_line(line, 42).unwrap_err();
            assert_eq!(e.line, 42);
            let s = e.to_string();
            assert!(s.starts_with("line 42: ") && s.contains(want), "{s}");
        }
    }

    fn ev(line: usize, kind: EventKind, t: u64, rwbs: &str, sector: u64, n: u64) -> Event {
        Event {
            line,
            kind,
            time_ns: t,
            dev: (7, 0),
            rwbs_text: rwbs.into(),
            rwbs: Rwbs::parse(rwbs).unwrap(),
            bytes: (kind == EventKind::Issue).then_some(n * 512),
            sector,
            nr_sectors: n,
            last: if kind == EventKind::Issue {
                "t".into()
            } else {
                "0".into()
            },
        }
    }

    #[test]
    fn pairing() {
        use EventKind::*;
        let events = vec![
            ev(1, Issue, 10, "R", 0, 8),
            ev(2, Issue, 11, "R", 8, 8),
            ev(3, Complete, 20, "R", 8, 8),
            ev(4, Complete, 21, "R", 0, 8),
            ev(5, Issue, 30, "FF", 0, 0),
            ev(6, Complete, 31, "FF", u64::MAX, 0),
            ev(7, Complete, 31, "WS", 0, 0),
            ev(8, Issue, 40, "WS", 0, 8),
            ev(9, Issue, 41, "WS", 0, 8),
            ev(10, Complete, 50, "WS", 0, 8),
            ev(11, Complete, 60, "WS", 0, 8),
            ev(12, Issue, 70, "WS", 16, 8),
            ev(13, Complete, 71, "RS", 99, 8),
        ];
        let t = pair(&events, None).unwrap();
        assert_eq!(t.dev, (7, 0));
        let got: Vec<(usize, u64, u64)> = t
            .requests
            .iter()
            .map(|r| (r.line, r.issue_ns, r.complete_ns))
            .collect();
        assert_eq!(
            got,
            [
                (1, 10, 21),
                (2, 11, 20),
                (5, 30, 31),
                (8, 40, 50),
                (9, 41, 60)
            ]
        );
        assert_eq!(t.unmatched_issues, 1);
        assert_eq!(
            (t.unmatched_completions, t.unmatched_empty_completions),
            (2, 1)
        );
        // Two devices need --dev.
        let mut other = ev(14, Issue, 80, "R", 0, 8);
        other.dev = (8, 0);
        let mut two = events.clone();
        two.push(other);
        let e = pair(&two, None).unwrap_err().to_string();
        assert!(e.contains("several devices (7,0, 8,0)"), "{e}");
        assert_eq!(pair(&two, Some((8, 0))).unwrap().unmatched_issues, 1);
        assert!(pair(&two, Some((9, 9)))
            .unwrap_err()
            .to_string()
            .contains("no requests of device 9,9"));
        assert!(pair(&[], None)
            .unwrap_err()
            .to_string()
            .contains("no block_rq_issue"));
    }
}
