//! What reaches the minfs device when Cannyls runs on `MinfsNvm`: the caller's buffers (no
//! copy), 4 KiB-aligned writes with block size 4096, and a device flush on `journal_sync`.
//! Uses a recording wrapper around minfs' in-memory device (512-byte logical, 4096-byte
//! physical sectors, like a 512e disk).

use std::io;
use std::sync::{Arc, Mutex};

use cannyls::block::BlockSize;
use cannyls::lump::LumpId;
use cannyls::storage::Storage;
use cannyls_adapter::MinfsNvm;
use minfs::{BlockDevice, Filesystem, FormatOptions, MemDevice};

#[derive(Debug, Clone, Copy)]
struct Io {
    offset: u64,
    len: usize,
    addr: usize,
}

#[derive(Debug, Default)]
struct Log {
    reads: Vec<Io>,
    writes: Vec<Io>,
    flushes: usize,
}

#[derive(Debug)]
struct Recording {
    inner: MemDevice,
    log: Mutex<Log>,
}

impl Recording {
    fn take(&self) -> Log {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl BlockDevice for Recording {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.log.lock().unwrap().reads.push(Io {
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        });
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.log.lock().unwrap().writes.push(Io {
            offset,
            len: buf.len(),
            addr: buf.as_ptr() as usize,
        });
        self.inner.write_at(buf, offset)
    }
    fn flush(&self) -> io::Result<()> {
        self.log.lock().unwrap().flushes += 1;
        self.inner.flush()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn logical_sector_size(&self) -> u32 {
        self.inner.logical_sector_size()
    }
    fn physical_sector_size(&self) -> u32 {
        self.inner.physical_sector_size()
    }
    fn is_read_only(&self) -> bool {
        false
    }
}

fn setup(block_size: Option<u16>) -> (Arc<Recording>, Storage<MinfsNvm>) {
    let dev = Arc::new(Recording {
        inner: MemDevice::new(64 << 20, 512, 4096),
        log: Mutex::default(),
    });
    let fs = Filesystem::format(dev.clone(), "mem", &FormatOptions::default()).unwrap();
    let mut nvm = MinfsNvm::create_in(&fs, "lusf", 48 << 20).unwrap();
    if let Some(bs) = block_size {
        nvm = nvm.with_block_size(BlockSize::new(bs).unwrap()).unwrap();
    }
    let storage = nvm.storage_builder().create(nvm).unwrap();
    (dev, storage)
}

fn put_lumps(storage: &mut Storage<MinfsNvm>) {
    for i in 0..8u8 {
        let data = storage
            .allocate_lump_data_with_bytes(&vec![i; 256 << 10])
            .unwrap();
        storage.put(&LumpId::new(u128::from(i)), &data).unwrap();
    }
}

#[test]
fn lump_data_goes_to_the_device_from_cannyls_buffer() {
    let (dev, mut storage) = setup(None);
    dev.take();
    let data = storage
        .allocate_lump_data_with_bytes(&[7u8; 100_000])
        .unwrap();
    storage.put(&LumpId::new(1), &data).unwrap();
    let log = dev.take();
    // One write for the lump (the journal record stays buffered until a sync), straight from
    // the LumpData's buffer: the data plus its trailer, padded to the block size (4096 by
    // default).
    assert_eq!(log.writes.len(), 1, "{:?}", log.writes);
    assert_eq!(log.writes[0].addr, data.as_bytes().as_ptr() as usize);
    assert_eq!(log.writes[0].len, 102_400);

    let got = storage.get(&LumpId::new(1)).unwrap().unwrap();
    assert_eq!(got.as_bytes(), data.as_bytes());
    let log = dev.take();
    assert_eq!(log.reads.len(), 1, "{:?}", log.reads);
    assert_eq!(log.reads[0].addr, got.as_bytes().as_ptr() as usize);
}

#[test]
fn journal_sync_flushes_the_device() {
    let (dev, mut storage) = setup(None);
    put_lumps(&mut storage);
    dev.take();
    storage.journal_sync().unwrap();
    let log = dev.take();
    assert!(!log.writes.is_empty(), "the journal is written");
    assert!(log.flushes >= 1, "and the device flushed");
}

#[test]
fn block_size_4096_the_default_makes_every_write_4k_aligned() {
    for block_size in [Some(4096), None] {
        let (dev, mut storage) = setup(block_size);
        put_lumps(&mut storage);
        storage.journal_sync().unwrap();
        drop(storage);
        let log = dev.take();
        assert!(log.writes.len() > 8);
        for w in &log.writes {
            assert_eq!(
                (w.offset % 4096, w.len % 4096),
                (0, 0),
                "{block_size:?}: {w:?}"
            );
        }
    }
}

#[test]
fn block_size_512_leaves_lumps_unaligned_to_4k() {
    // Why block size 4096 exists: with 512, a 256 KiB lump plus its trailer takes 513 sectors,
    // so the next lump starts off a 4 KiB boundary (read-modify-write on a 512e disk).
    let (dev, mut storage) = setup(Some(512));
    dev.take();
    put_lumps(&mut storage);
    let log = dev.take();
    assert!(log.writes.iter().any(|w| w.offset % 4096 != 0));
    assert!(log
        .writes
        .iter()
        .all(|w| w.offset % 512 == 0 && w.len % 512 == 0));
}
