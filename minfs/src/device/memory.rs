//! An in-memory [`BlockDevice`], for unit tests and property tests.

use std::io;
use std::sync::Mutex;

use super::{check_request, BlockDevice};

/// A device held in memory. Writes are durable at once (`flush` does nothing).
#[derive(Debug)]
pub struct MemDevice {
    data: Mutex<Vec<u8>>,
    logical: u32,
    physical: u32,
}

impl MemDevice {
    /// A zero-filled device of `len` bytes.
    pub fn new(len: u64, logical: u32, physical: u32) -> MemDevice {
        MemDevice::from_bytes(vec![0; len as usize], logical, physical)
    }

    /// A device holding `bytes`.
    pub fn from_bytes(bytes: Vec<u8>, logical: u32, physical: u32) -> MemDevice {
        MemDevice {
            data: Mutex::new(bytes),
            logical,
            physical,
        }
    }

    /// A copy of the whole content.
    pub fn snapshot(&self) -> Vec<u8> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A panic while holding the lock cannot leave the Vec invalid; keep going.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BlockDevice for MemDevice {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let data = self.lock();
        let start = offset as usize;
        buf.copy_from_slice(&data[start..start + buf.len()]);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        check_request(self, buf.as_ptr(), buf.len(), offset)?;
        let mut data = self.lock();
        let start = offset as usize;
        data[start..start + buf.len()].copy_from_slice(buf);
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        self.lock().len() as u64
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
