//! A sparse in-memory [`BlockDevice`]: any size up to `u64::MAX` bytes, holding only the
//! 4 KiB pages written. For tests and benchmarks of large devices (a 1 PiB filesystem in a few
//! MiB of memory).

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use super::{check_request, BlockDevice};

/// Granularity of what is stored.
const PAGE: u64 = 4096;

/// A device of `len` bytes in memory that reads zeros where nothing was written and stores
/// only the 4 KiB pages written (a page written with zeros is stored too). Honours the
/// [`BlockDevice`] contract (alignment and bounds checked, whole transfers); writes are durable
/// at once (`flush` does nothing).
#[derive(Debug)]
pub struct SparseMemDevice {
    pages: Mutex<BTreeMap<u64, Box<[u8]>>>,
    len: u64,
    logical: u32,
    physical: u32,
}

impl SparseMemDevice {
    /// A zero-filled device of `len` bytes with these sector sizes.
    pub fn new(len: u64, logical: u32, physical: u32) -> SparseMemDevice {
        SparseMemDevice {
            pages: Mutex::new(BTreeMap::new()),
            len,
            logical,
            physical,
        }
    }

    /// Bytes held in memory for written pages.
    pub fn stored_bytes(&self) -> u64 {
        self.lock().len() as u64 * PAGE
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Box<[u8]>>> {
        // A panic while holding the lock cannot leave the map invalid; keep going.
        self.pages.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Calls `f(page index, offset in the page, range of the caller's buffer)` for each page
    /// that `len` bytes at `offset` touch.
    fn for_each_page(
        offset: u64,
        len: usize,
        mut f: impl FnMut(u64, usize, std::ops::Range<usize>),
    ) {
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let in_page = (at % PAGE) as usize;
            let n = (PAGE as usize - in_page).min(len - done);
            f(at / PAGE, in_page, done..done + n);
            done += n;
        }
    }
}

impl BlockDevice for SparseMemDevice {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let pages = self.lock();
        Self::for_each_page(offset, buf.len(), |page, at, r| {
            let n = r.len();
            match pages.get(&page) {
                Some(p) => buf[r].copy_from_slice(&p[at..at + n]),
                None => buf[r].fill(0),
            }
        });
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let mut pages = self.lock();
        Self::for_each_page(offset, buf.len(), |page, at, r| {
            let n = r.len();
            let p = pages
                .entry(page)
                .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
            p[at..at + n].copy_from_slice(&buf[r]);
        });
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn logical_sector_size(&self) -> u32 {
        self.logical
    }

    fn physical_sector_size(&self) -> u32 {
        self.physical
    }

    fn is_read_only(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::AlignedBuf;

    #[test]
    fn stores_only_what_is_written_and_reads_it_back() {
        let d = SparseMemDevice::new(1 << 50, 512, 4096);
        let mut w = AlignedBuf::zeroed(3 * 512, 512);
        w.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8 | 1);
        // Straddles a page boundary near the end of the device.
        let at = (1u64 << 50) - 4096 - 512;
        d.write_at(&w, at).unwrap();
        assert_eq!(d.stored_bytes(), 2 * 4096);
        let mut r = AlignedBuf::zeroed(4096 + 1024, 512);
        d.read_at(&mut r, at - 1024).unwrap();
        assert!(r[..1024].iter().all(|&b| b == 0));
        assert_eq!(&r[1024..1024 + w.len()], &w[..]);
        assert!(r[1024 + w.len()..].iter().all(|&b| b == 0));
    }

    #[test]
    fn refuses_what_the_contract_refuses() {
        let d = SparseMemDevice::new(1 << 40, 512, 4096);
        let mut b = AlignedBuf::zeroed(1024, 512);
        for (len, off) in [(512, 100), (1024, (1 << 40) - 512), (1000, 0)] {
            let err = d.read_at(&mut b[..len], off).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{len} at {off}");
            let err = d.write_at(&b[..len], off).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{len} at {off}");
        }
        assert_eq!(d.stored_bytes(), 0);
    }
}
