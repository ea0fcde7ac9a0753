//! What `minfs-bench run` stores in each lump: a deterministic byte stream chosen by the lump's
//! id and version, so that any read can be checked without keeping the data.
//!
//! The stream is xorshift64* (one 64-bit word per 8 bytes, little-endian), seeded by mixing
//! the id and the version with splitmix64. The version is how many times the id was put before
//! (0 for the first put, 1 after one `OverWrite`, ...), so a stale copy left behind by an
//! overwrite does not pass for the current one. A lump of `n` bytes holds the first `n`
//! bytes of its stream, whatever `n` is.
//!
//! ```
//! use bencher_workloads::run::content;
//!
//! let mut buf = vec![0; 1000];
//! content::fill(7, 0, &mut buf);
//! assert_eq!(buf, content::bytes(7, 0, 1000));
//! assert_eq!(content::first_mismatch(7, 0, &buf), None);
//! buf[123] ^= 1;
//! assert_eq!(content::first_mismatch(7, 0, &buf), Some(123));
//! assert_ne!(content::bytes(7, 1, 8), content::bytes(7, 0, 8)); // another version
//! ```

/// What `minfs-bench run` puts in each lump (`--content`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Content {
    /// The lump's stream ([`fill`]): every read can be checked against its id and version.
    #[default]
    Stream,
    /// All zeros: for timing runs on a drive whose backing stores zeros as holes (an emulated
    /// whole drive), where the stream's bytes would take host space. A read is checked to be
    /// all zeros, which cannot tell one lump or version from another.
    Zeros,
}

impl Content {
    /// Fills `buf` with the content of lump `id` at `version`.
    pub fn fill(self, id: u64, version: u32, buf: &mut [u8]) {
        count_call();
        match self {
            Content::Stream => fill(id, version, buf),
            Content::Zeros => buf.fill(0),
        }
    }

    /// The offset of the first byte of `data` that is not the content of lump `id` at
    /// `version`, and the byte expected there.
    pub fn first_mismatch(self, id: u64, version: u32, data: &[u8]) -> Option<(usize, u8)> {
        count_call();
        match self {
            Content::Stream => {
                first_mismatch(id, version, data).map(|at| (at, bytes(id, version, at + 1)[at]))
            }
            Content::Zeros => data.iter().position(|&b| b != 0).map(|at| (at, 0)),
        }
    }
}

/// splitmix64: a good 64-bit mixer (Steele, Lea, Flood 2014).
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator state for lump `id` at `version` (never 0, which xorshift cannot leave).
fn seed(id: u64, version: u32) -> u64 {
    let s = splitmix64(splitmix64(id) ^ u64::from(version).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    if s == 0 {
        0x2545_F491_4F6C_DD1D
    } else {
        s
    }
}

/// The stream of one lump, one 64-bit word at a time.
struct Stream(u64);

impl Stream {
    #[inline(always)]
    fn next_word(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[cfg(test)]
thread_local! {
    /// Calls of [`Content::fill`] and [`Content::first_mismatch`] on this thread (tests:
    /// content work must stay outside an operation's timed span).
    pub(crate) static CALLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline(always)]
fn count_call() {
    #[cfg(test)]
    CALLS.with(|c| c.set(c.get() + 1));
}

/// Fills `buf` with the first `buf.len()` bytes of the content of lump `id` at `version`.
pub fn fill(id: u64, version: u32, buf: &mut [u8]) {
    let mut stream = Stream(seed(id, version));
    let mut chunks = buf.chunks_exact_mut(8);
    for chunk in &mut chunks {
        chunk.copy_from_slice(&stream.next_word().to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let word = stream.next_word().to_le_bytes();
        rest.copy_from_slice(&word[..rest.len()]);
    }
}

/// The first `len` bytes of the content of lump `id` at `version`.
pub fn bytes(id: u64, version: u32, len: usize) -> Vec<u8> {
    let mut buf = vec![0; len];
    fill(id, version, &mut buf);
    buf
}

/// The offset of the first byte of `data` that differs from the content of lump `id` at
/// `version`, or `None` when all `data.len()` bytes match. Allocates nothing.
pub fn first_mismatch(id: u64, version: u32, data: &[u8]) -> Option<usize> {
    let mut stream = Stream(seed(id, version));
    let mut chunks = data.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let expected = stream.next_word().to_le_bytes();
        if chunk != expected {
            return Some(offset + first_difference(chunk, &expected));
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let expected = stream.next_word().to_le_bytes();
        if rest != &expected[..rest.len()] {
            return Some(offset + first_difference(rest, &expected));
        }
    }
    None
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_fill_and_check_zeros() {
        let mut buf = vec![7u8; 100];
        Content::Zeros.fill(3, 1, &mut buf);
        assert!(buf.iter().all(|&b| b == 0));
        assert_eq!(Content::Zeros.first_mismatch(3, 1, &buf), None);
        buf[42] = 1;
        assert_eq!(Content::Zeros.first_mismatch(3, 1, &buf), Some((42, 0)));
        Content::Stream.fill(3, 1, &mut buf);
        assert_eq!(buf, bytes(3, 1, 100));
        buf[9] ^= 1;
        assert_eq!(
            Content::Stream.first_mismatch(3, 1, &buf),
            Some((9, bytes(3, 1, 10)[9]))
        );
    }

    #[test]
    fn deterministic_and_distinct() {
        assert_eq!(bytes(1, 0, 100), bytes(1, 0, 100));
        assert_ne!(bytes(1, 0, 64), bytes(2, 0, 64));
        assert_ne!(bytes(1, 0, 64), bytes(1, 1, 64));
        // A shorter lump is a prefix of a longer one of the same id and version.
        assert_eq!(bytes(9, 3, 13)[..], bytes(9, 3, 100)[..13]);
        // Not all zero, even for id 0.
        assert!(bytes(0, 0, 64).iter().any(|&b| b != 0));
        assert!(bytes(0, 0, 0).is_empty());
    }

    #[test]
    fn mismatches_are_found_at_every_offset() {
        for len in [0usize, 1, 7, 8, 9, 4096, 4099] {
            let good = bytes(42, 0, len);
            assert_eq!(first_mismatch(42, 0, &good), None);
            for at in [0, len / 2, len.saturating_sub(1)] {
                if at < len {
                    let mut bad = good.clone();
                    bad[at] ^= 0x80;
                    assert_eq!(first_mismatch(42, 0, &bad), Some(at), "len {len} at {at}");
                }
            }
            if len > 0 {
                assert!(first_mismatch(42, 1, &good).is_some());
            }
        }
    }
}
