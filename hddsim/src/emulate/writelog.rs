//! The write log of `hddsim emulate --write-log FILE`: every write the drive accepts (its
//! position, length and data) and every flush, in the order accepted, so that the states a
//! power cut could leave can be built afterwards from the initial image (`crashcheck`).
//! Modelled on Linux's dm-log-writes; the format is in `docs/WRITELOG.md`.
//!
//! Layout (little-endian): a 32-byte file header, then entries. Each entry is a 56-byte
//! header followed, for a write, by its data (a multiple of 512 bytes):
//!
//! ```text
//! file header: magic "HDDWLOG1" (8) | version u32 = 1 | sector size u32 = 512 |
//!              device size u64 | reserved u32 = 0 | crc32c of the 28 bytes before u32
//! entry:       magic "WLE1" (4) | kind u8 (1 write, 2 flush) | 3 zero bytes |
//!              seq u64 (entries from 0) | sector u64 | bytes u64 (0 for a flush) |
//!              accepted_ns u64 (CLOCK_MONOTONIC) | reserved u64 = 0 |
//!              crc32c of the data u32 | crc32c of the 52 header bytes before u32
//! ```
//!
//! `accepted_ns` is when the emulator took the request, on CLOCK_MONOTONIC (the op-log's and
//! tracefs' `mono` clock), so an operation of the op-log can be placed among the entries.
//!
//! ```
//! use hddsim::emulate::writelog::{Entry, Reader, Writer};
//!
//! let mut buf = Vec::new();
//! let mut w = Writer::new(&mut buf, 1 << 20).unwrap();
//! w.write(8, &[7u8; 1024]).unwrap();
//! w.flush_mark().unwrap();
//! w.finish().unwrap();
//! let mut r = Reader::new(&buf[..]).unwrap();
//! assert_eq!(r.device_size(), 1 << 20);
//! let e = r.next_entry().unwrap().unwrap();
//! assert!(matches!(e, Entry::Write { sector: 8, ref data, .. } if data.len() == 1024));
//! assert!(matches!(r.next_entry().unwrap(), Some(Entry::Flush { seq: 1, .. })));
//! assert!(r.next_entry().unwrap().is_none());
//! ```

use std::io::{self, Read, Write};

/// The file header's magic.
pub const FILE_MAGIC: &[u8; 8] = b"HDDWLOG1";
/// An entry header's magic.
pub const ENTRY_MAGIC: &[u8; 4] = b"WLE1";
/// The format version.
pub const VERSION: u32 = 1;
/// Bytes of the file header.
pub const FILE_HEADER_BYTES: usize = 32;
/// Bytes of an entry header.
pub const ENTRY_HEADER_BYTES: usize = 56;
const KIND_WRITE: u8 = 1;
const KIND_FLUSH: u8 = 2;

/// `CLOCK_MONOTONIC` now, in nanoseconds (the op-log's clock).
pub fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always readable");
    (t.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec() as u64)
}

/// One entry of a write log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A write of whole 512-byte sectors.
    Write {
        /// Its entry number.
        seq: u64,
        /// First sector (512-byte units).
        sector: u64,
        /// When it was accepted (CLOCK_MONOTONIC ns).
        accepted_ns: u64,
        /// The data.
        data: Vec<u8>,
    },
    /// A flush of the drive's cache.
    Flush {
        /// Its entry number.
        seq: u64,
        /// When it was accepted (CLOCK_MONOTONIC ns).
        accepted_ns: u64,
    },
}

impl Entry {
    /// Its entry number.
    pub fn seq(&self) -> u64 {
        match self {
            Entry::Write { seq, .. } | Entry::Flush { seq, .. } => *seq,
        }
    }

    /// When it was accepted (CLOCK_MONOTONIC ns).
    pub fn accepted_ns(&self) -> u64 {
        match self {
            Entry::Write { accepted_ns, .. } | Entry::Flush { accepted_ns, .. } => *accepted_ns,
        }
    }
}

/// What is wrong with a write log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteLogError {
    /// Reading or writing failed.
    #[error("write log: {0}")]
    Io(#[from] io::Error),
    /// The file does not start with the write log's header.
    #[error("not a write log: the file header's magic is {found:?}, not \"HDDWLOG1\"")]
    NotAWriteLog {
        /// The first 8 bytes found.
        found: Vec<u8>,
    },
    /// The file header's checksum does not match.
    #[error(
        "write log: the file header's checksum is {found:#010x}, its bytes give {computed:#010x}"
    )]
    HeaderChecksum {
        /// Stored.
        found: u32,
        /// Computed.
        computed: u32,
    },
    /// A version this reader does not know.
    #[error("write log: version {0} (this reader knows version 1)")]
    Version(u32),
    /// An entry is damaged.
    #[error("write log: entry {index} at byte {offset}: {what}")]
    BadEntry {
        /// Its position among the entries (from 0).
        index: u64,
        /// Its byte offset in the file.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The file ends inside an entry (or inside the file header).
    #[error("write log: truncated: entry {index} at byte {offset} needs {needed} bytes, {found} are left")]
    Truncated {
        /// The entry's position (from 0).
        index: u64,
        /// Its byte offset.
        offset: u64,
        /// Bytes the entry needs.
        needed: u64,
        /// Bytes present.
        found: u64,
    },
    /// A write that is not whole sectors.
    #[error("write log: a write of {0} bytes is not whole 512-byte sectors")]
    NotSectors(usize),
}

/// Writes a write log.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    seq: u64,
}

impl<W: Write> Writer<W> {
    /// Starts a log of a device of `device_size` bytes on `out` (writes the file header).
    pub fn new(mut out: W, device_size: u64) -> Result<Self, WriteLogError> {
        out.write_all(&encode_file_header(device_size))?;
        Ok(Writer { out, seq: 0 })
    }

    /// Records a write of `data` (whole sectors) at `sector`, accepted now.
    pub fn write(&mut self, sector: u64, data: &[u8]) -> Result<(), WriteLogError> {
        if data.len() % 512 != 0 {
            return Err(WriteLogError::NotSectors(data.len()));
        }
        let h = encode_entry_header(KIND_WRITE, self.seq, sector, data, monotonic_ns());
        self.out.write_all(&h)?;
        self.out.write_all(data)?;
        self.seq += 1;
        Ok(())
    }

    /// Records a flush, accepted now.
    pub fn flush_mark(&mut self) -> Result<(), WriteLogError> {
        let h = encode_entry_header(KIND_FLUSH, self.seq, 0, &[], monotonic_ns());
        self.out.write_all(&h)?;
        self.seq += 1;
        Ok(())
    }

    /// Entries written so far.
    pub fn entries(&self) -> u64 {
        self.seq
    }

    /// Writes out what is buffered and returns the output.
    pub fn finish(mut self) -> Result<W, WriteLogError> {
        self.out.flush()?;
        Ok(self.out)
    }

    /// Writes out what is buffered.
    pub fn flush_out(&mut self) -> Result<(), WriteLogError> {
        self.out.flush()?;
        Ok(())
    }
}

/// The file header of a log of a `device_size`-byte device.
pub fn encode_file_header(device_size: u64) -> [u8; FILE_HEADER_BYTES] {
    let mut h = [0u8; FILE_HEADER_BYTES];
    h[0..8].copy_from_slice(FILE_MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&512u32.to_le_bytes());
    h[16..24].copy_from_slice(&device_size.to_le_bytes());
    let crc = crc32c::crc32c(&h[..28]);
    h[28..32].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Decodes a file header: the device size.
pub fn decode_file_header(h: &[u8; FILE_HEADER_BYTES]) -> Result<u64, WriteLogError> {
    if &h[0..8] != FILE_MAGIC {
        return Err(WriteLogError::NotAWriteLog {
            found: h[0..8].to_vec(),
        });
    }
    let found = u32::from_le_bytes(h[28..32].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&h[..28]);
    if found != computed {
        return Err(WriteLogError::HeaderChecksum { found, computed });
    }
    let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(WriteLogError::Version(version));
    }
    Ok(u64::from_le_bytes(h[16..24].try_into().expect("8 bytes")))
}

/// An entry header (`data` is the write's data, empty for a flush).
pub fn encode_entry_header(
    kind: u8,
    seq: u64,
    sector: u64,
    data: &[u8],
    accepted_ns: u64,
) -> [u8; ENTRY_HEADER_BYTES] {
    let mut h = [0u8; ENTRY_HEADER_BYTES];
    h[0..4].copy_from_slice(ENTRY_MAGIC);
    h[4] = kind;
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..24].copy_from_slice(&sector.to_le_bytes());
    h[24..32].copy_from_slice(&(data.len() as u64).to_le_bytes());
    h[32..40].copy_from_slice(&accepted_ns.to_le_bytes());
    h[48..52].copy_from_slice(&crc32c::crc32c(data).to_le_bytes());
    let crc = crc32c::crc32c(&h[..52]);
    h[52..56].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A decoded entry header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// 1 write, 2 flush.
    pub kind: u8,
    /// Entry number.
    pub seq: u64,
    /// First sector.
    pub sector: u64,
    /// Data bytes.
    pub bytes: u64,
    /// CLOCK_MONOTONIC ns.
    pub accepted_ns: u64,
    /// crc32c of the data.
    pub data_crc: u32,
}

/// Decodes an entry header; the error says what is wrong (for [`WriteLogError::BadEntry`]).
pub fn decode_entry_header(h: &[u8; ENTRY_HEADER_BYTES]) -> Result<EntryHeader, String> {
    if &h[0..4] != ENTRY_MAGIC {
        return Err(format!("magic {:?}, not \"WLE1\"", &h[0..4]));
    }
    let found = u32::from_le_bytes(h[52..56].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&h[..52]);
    if found != computed {
        return Err(format!(
            "header checksum {found:#010x}, its bytes give {computed:#010x}"
        ));
    }
    let u = |a: usize| u64::from_le_bytes(h[a..a + 8].try_into().expect("8 bytes"));
    let e = EntryHeader {
        kind: h[4],
        seq: u(8),
        sector: u(16),
        bytes: u(24),
        accepted_ns: u(32),
        data_crc: u32::from_le_bytes(h[48..52].try_into().expect("4 bytes")),
    };
    match e.kind {
        KIND_WRITE if e.bytes % 512 == 0 && e.bytes > 0 => Ok(e),
        KIND_WRITE => Err(format!("a write of {} bytes", e.bytes)),
        KIND_FLUSH if e.bytes == 0 => Ok(e),
        KIND_FLUSH => Err(format!("a flush with {} bytes of data", e.bytes)),
        k => Err(format!("unknown kind {k}")),
    }
}

/// Reads a write log entry by entry, checking every checksum.
#[derive(Debug)]
pub struct Reader<R: Read> {
    input: R,
    device_size: u64,
    index: u64,
    offset: u64,
}

/// Reads as many bytes as are left, up to `buf.len()`.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> Reader<R> {
    /// Reads and checks the file header.
    pub fn new(mut input: R) -> Result<Self, WriteLogError> {
        let mut h = [0u8; FILE_HEADER_BYTES];
        let n = read_full(&mut input, &mut h)?;
        if n < FILE_HEADER_BYTES {
            return Err(WriteLogError::Truncated {
                index: 0,
                offset: 0,
                needed: FILE_HEADER_BYTES as u64,
                found: n as u64,
            });
        }
        let device_size = decode_file_header(&h)?;
        Ok(Reader {
            input,
            device_size,
            index: 0,
            offset: FILE_HEADER_BYTES as u64,
        })
    }

    /// The logged device's size in bytes.
    pub fn device_size(&self) -> u64 {
        self.device_size
    }

    /// The byte offset of the next entry.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next entry with its data, or `None` at the end of the log.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, WriteLogError> {
        let Some(h) = self.next_header()? else {
            return Ok(None);
        };
        if h.kind == KIND_FLUSH {
            return Ok(Some(Entry::Flush {
                seq: h.seq,
                accepted_ns: h.accepted_ns,
            }));
        }
        let mut data = vec![0u8; h.bytes as usize];
        self.read_data(&h, &mut data)?;
        Ok(Some(Entry::Write {
            seq: h.seq,
            sector: h.sector,
            accepted_ns: h.accepted_ns,
            data,
        }))
    }

    /// The next entry's header (its data, if any, must then be read with [`Reader::read_data`]
    /// or skipped with [`Reader::skip_data`]), or `None` at the end.
    pub fn next_header(&mut self) -> Result<Option<EntryHeader>, WriteLogError> {
        let mut raw = [0u8; ENTRY_HEADER_BYTES];
        let n = read_full(&mut self.input, &mut raw)?;
        if n == 0 {
            return Ok(None);
        }
        if n < ENTRY_HEADER_BYTES {
            return Err(self.truncated(ENTRY_HEADER_BYTES as u64, n as u64));
        }
        let h = decode_entry_header(&raw).map_err(|what| self.bad(what))?;
        if h.seq != self.index {
            return Err(self.bad(format!("numbered {}, expected {}", h.seq, self.index)));
        }
        if h.kind == KIND_WRITE && h.sector * 512 + h.bytes > self.device_size {
            return Err(self.bad(format!(
                "a write of {} bytes at sector {} ends past the device's {} bytes",
                h.bytes, h.sector, self.device_size
            )));
        }
        if h.kind == KIND_FLUSH {
            self.advance(0);
        }
        Ok(Some(h))
    }

    /// Reads the data of the write whose header [`Reader::next_header`] returned, checking it.
    pub fn read_data(&mut self, h: &EntryHeader, data: &mut [u8]) -> Result<(), WriteLogError> {
        let n = read_full(&mut self.input, data)?;
        if n < data.len() {
            return Err(self.truncated(
                ENTRY_HEADER_BYTES as u64 + h.bytes,
                (ENTRY_HEADER_BYTES + n) as u64,
            ));
        }
        let crc = crc32c::crc32c(data);
        if crc != h.data_crc {
            return Err(self.bad(format!(
                "data checksum {:#010x}, its {} bytes give {crc:#010x}",
                h.data_crc, h.bytes
            )));
        }
        self.advance(h.bytes);
        Ok(())
    }

    fn advance(&mut self, data: u64) {
        self.index += 1;
        self.offset += ENTRY_HEADER_BYTES as u64 + data;
    }

    fn bad(&self, what: String) -> WriteLogError {
        WriteLogError::BadEntry {
            index: self.index,
            offset: self.offset,
            what,
        }
    }

    fn truncated(&self, needed: u64, found: u64) -> WriteLogError {
        WriteLogError::Truncated {
            index: self.index,
            offset: self.offset,
            needed,
            found,
        }
    }
}

/// Applies every write of the log at `log` to `image` (a file of the device's size):
/// `image` then holds what the drive held when the log ended, if it held the initial image
/// before. Returns the number of writes and flushes.
pub fn replay_onto(
    log: &std::path::Path,
    image: &std::path::Path,
) -> Result<(u64, u64), WriteLogError> {
    use std::os::unix::fs::FileExt;
    let mut r = Reader::new(io::BufReader::with_capacity(
        4 << 20,
        std::fs::File::open(log)?,
    ))?;
    let img = std::fs::OpenOptions::new().write(true).open(image)?;
    let (mut writes, mut flushes) = (0, 0);
    while let Some(e) = r.next_entry()? {
        match e {
            Entry::Write { sector, data, .. } => {
                img.write_all_at(&data, sector * 512)?;
                writes += 1;
            }
            Entry::Flush { .. } => flushes += 1,
        }
    }
    img.sync_all()?;
    Ok((writes, flushes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = Writer::new(Vec::new(), 1 << 20).unwrap();
        w.write(0, &[1u8; 512]).unwrap();
        w.write(100, &(0..4096).map(|i| i as u8).collect::<Vec<_>>())
            .unwrap();
        w.flush_mark().unwrap();
        w.write(7, &[9u8; 1024]).unwrap();
        w.finish().unwrap()
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Entry>, WriteLogError> {
        let mut r = Reader::new(bytes)?;
        let mut out = Vec::new();
        while let Some(e) = r.next_entry()? {
            out.push(e);
        }
        Ok(out)
    }

    #[test]
    fn roundtrip() {
        let bytes = sample();
        let e = read_all(&bytes).unwrap();
        assert_eq!(e.len(), 4);
        assert!(
            matches!(&e[0], Entry::Write { seq: 0, sector: 0, data, .. } if data == &[1u8; 512])
        );
        assert!(
            matches!(&e[1], Entry::Write { seq: 1, sector: 100, data, .. } if data[4095] == 255)
        );
        assert!(matches!(e[2], Entry::Flush { seq: 2, .. }));
        assert!(
            matches!(&e[3], Entry::Write { seq: 3, sector: 7, data, .. } if data.len() == 1024)
        );
        // Accepted in order, on one clock.
        assert!(e
            .windows(2)
            .all(|w| w[0].accepted_ns() <= w[1].accepted_ns()));
        assert_eq!(
            decode_file_header(&encode_file_header(12345 * 512)).unwrap(),
            12345 * 512
        );
    }

    #[test]
    fn every_flipped_byte_is_caught() {
        let bytes = sample();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(read_all(&bad).is_err(), "a flipped byte {i} went unnoticed");
        }
    }

    #[test]
    fn every_truncation_is_caught_except_at_entry_ends() {
        let bytes = sample();
        // Entry boundaries: a log cut there is a shorter, valid log.
        let mut ends = vec![FILE_HEADER_BYTES];
        let mut r = Reader::new(&bytes[..]).unwrap();
        while r.next_entry().unwrap().is_some() {
            ends.push(r.offset() as usize);
        }
        for n in 0..bytes.len() {
            let res = read_all(&bytes[..n]);
            if ends.contains(&n) {
                assert!(res.is_ok(), "cut at entry end {n}: {res:?}");
            } else {
                match res {
                    Err(WriteLogError::Truncated { .. }) => {}
                    other => panic!("cut at {n}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn bad_input_is_named() {
        let e = read_all(b"NOTALOG_________________________").unwrap_err();
        assert!(e.to_string().contains("not a write log"), "{e}");
        let mut w = Writer::new(Vec::new(), 1 << 20).unwrap();
        assert!(matches!(
            w.write(0, &[0u8; 100]),
            Err(WriteLogError::NotSectors(100))
        ));
        // A write past the device's end.
        w.write(2047, &[0u8; 1024]).unwrap();
        let e = read_all(&w.finish().unwrap()).unwrap_err();
        assert!(e.to_string().contains("ends past the device"), "{e}");
    }
}
