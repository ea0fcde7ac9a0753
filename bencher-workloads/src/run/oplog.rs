//! The clock operations are timed with, and the per-operation log (`--op-log FILE`).
//!
//! Times are `CLOCK_MONOTONIC` nanoseconds, read with `clock_gettime` — the clock of
//! tracefs' `mono` trace clock (`trace_clock` = `mono`), so that block requests captured from
//! the kernel can be charged to the operation that issued them (`docs/HDD-MODEL.md`).
//! (`std::time::Instant` is not promised to be that clock.)
//!
//! The log is text, tab-separated (shown here with spaces), one line per operation in order,
//! after comment lines starting with `#` (the last one names the columns):
//!
//! ```text
//! # minfs-bench op-log: one line per operation; start_ns and end_ns are CLOCK_MONOTONIC nanoseconds (tracefs trace_clock 'mono')
//! # seq  kind  id  bytes  start_ns  end_ns
//! 0  new  1  262144  5817203918211  5817204154037
//! 1  sync  -  0  5817204170112  5817204409876
//! 2  delete_range  1..3  0  5817204411010  5817204412200
//! ```
//!
//! `seq` counts from 0; `kind` is [`OpKind::name`](crate::OpKind::name) (`new`, `overwrite`,
//! `embed`, `get`, `delete`, `delete_range`, `sync`); `id` is the lump id, `START..END` for a
//! range delete and `-` for a sync; `bytes` is the payload put or read (0 otherwise).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use nix::time::{clock_gettime, ClockId};

use crate::generate::Op;

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always readable");
    // Both fields are non-negative for CLOCK_MONOTONIC.
    (t.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec() as u64)
}

/// The header comment of an op-log.
pub const HEADER: &str = "# minfs-bench op-log: one line per operation; start_ns and end_ns \
                          are CLOCK_MONOTONIC nanoseconds (tracefs trace_clock 'mono')\n\
                          # seq\tkind\tid\tbytes\tstart_ns\tend_ns\n";

/// An op-log being written.
pub struct OpLog {
    out: BufWriter<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for OpLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpLog").finish_non_exhaustive()
    }
}

impl OpLog {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path) -> io::Result<OpLog> {
        OpLog::new(Box::new(File::create(path)?))
    }

    /// A log written to `out`, starting with the header.
    pub fn new(out: Box<dyn Write + Send>) -> io::Result<OpLog> {
        // A large buffer: few write calls while the operations run.
        let mut out = BufWriter::with_capacity(1 << 20, out);
        out.write_all(HEADER.as_bytes())?;
        Ok(OpLog { out })
    }

    /// Appends the line of operation `seq`.
    pub fn record(
        &mut self,
        seq: usize,
        op: &Op,
        bytes: u64,
        start_ns: u64,
        end_ns: u64,
    ) -> io::Result<()> {
        let kind = op.kind().name();
        match *op {
            Op::Put { id, .. } | Op::Get { id, .. } | Op::Delete { id } => writeln!(
                self.out,
                "{seq}\t{kind}\t{id}\t{bytes}\t{start_ns}\t{end_ns}"
            ),
            Op::DeleteRange { start, end } => writeln!(
                self.out,
                "{seq}\t{kind}\t{start}..{end}\t{bytes}\t{start_ns}\t{end_ns}"
            ),
            Op::Sync => writeln!(self.out, "{seq}\t{kind}\t-\t{bytes}\t{start_ns}\t{end_ns}"),
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines() {
        let shared = Shared::default();
        let mut log = OpLog::new(Box::new(shared.clone())).unwrap();
        let put = Op::Put {
            id: 1,
            size: 10,
            embedded: true,
            overwrite: false,
        };
        log.record(0, &put, 10, 5, 6).unwrap();
        log.record(1, &Op::DeleteRange { start: 1, end: 3 }, 0, 7, 8)
            .unwrap();
        log.record(2, &Op::Sync, 0, 9, 9).unwrap();
        log.flush().unwrap();
        let text = String::from_utf8(shared.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "# seq\tkind\tid\tbytes\tstart_ns\tend_ns");
        assert_eq!(lines[2], "0\tembed\t1\t10\t5\t6");
        assert_eq!(lines[3], "1\tdelete_range\t1..3\t0\t7\t8");
        assert_eq!(lines[4], "2\tsync\t-\t0\t9\t9");
    }

    #[test]
    fn clock_is_monotonic_and_not_realtime() {
        let a = monotonic_ns();
        let b = monotonic_ns();
        assert!(b >= a);
        let realtime = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        // Monotonic time starts at boot, far from the epoch.
        assert!(a < realtime / 2);
    }
}
