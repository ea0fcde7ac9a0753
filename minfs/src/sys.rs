//! Everything `unsafe` in minfs lives here: the aligned buffer used for O_DIRECT I/O, the
//! block-device ioctls, `statx` and the huge-page allocator ([`HugeAlloc`]). The rest of the crate is `#![deny(unsafe_code)]`.
#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::fs::File;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A zero-initialised heap buffer whose start is aligned to `align` bytes, for O_DIRECT I/O.
///
/// It is never exposed uninitialised: the memory comes from `alloc_zeroed`.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Option<Layout>,
}

// SAFETY: `AlignedBuf` owns its allocation exclusively (like `Vec<u8>`); `&AlignedBuf` only
// hands out `&[u8]`, so sharing and sending it between threads is sound.
unsafe impl Send for AlignedBuf {}
// SAFETY: see `Send` above; there is no interior mutability.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A buffer of `len` zero bytes aligned to `align` (a power of two).
    ///
    /// # Panics
    /// If `align` is not a power of two or `len` rounded up to `align` overflows `isize`
    /// (both programming errors, never a consequence of on-disk data).
    pub fn zeroed(len: usize, align: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len.max(1), align)
            .expect("AlignedBuf: align must be a power of two and len must fit isize");
        if len == 0 {
            // An aligned, non-null, never-dereferenced address for the empty slice.
            let dangling = std::ptr::without_provenance_mut::<u8>(layout.align());
            return AlignedBuf {
                ptr: NonNull::new(dangling).expect("align is non-zero"),
                len: 0,
                layout: None,
            };
        }
        // SAFETY: `layout` has a non-zero size (len >= 1 here).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf {
            ptr,
            len,
            layout: Some(layout),
        }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised (zeroed at allocation, then only written
        // through `&mut [u8]`) bytes owned by `self`, or is dangling with `len == 0`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: `ptr` was returned by `alloc_zeroed(layout)` and is freed only here.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .finish()
    }
}

mod ioctl {
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    nix::ioctl_read!(blkgetsize64, 0x12, 114, u64);
    // BLKSSZGET = _IO(0x12, 104), but the kernel writes an int through the argument.
    nix::ioctl_read_bad!(blksszget, nix::request_code_none!(0x12, 104), libc::c_int);
    // BLKPBSZGET = _IO(0x12, 123), writes an unsigned int.
    nix::ioctl_read_bad!(blkpbszget, nix::request_code_none!(0x12, 123), libc::c_uint);
}

/// Size in bytes, logical and physical sector size of an open block device.
pub fn block_device_geometry(file: &File) -> io::Result<(u64, u32, u32)> {
    let fd = file.as_raw_fd();
    let mut size: u64 = 0;
    let mut lss: libc::c_int = 0;
    let mut pss: libc::c_uint = 0;
    // SAFETY: `fd` is an open descriptor owned by `file` for the duration of the calls; each
    // ioctl writes exactly one value of the pointed-to type, which lives on our stack.
    unsafe {
        ioctl::blkgetsize64(fd, &mut size).map_err(io::Error::from)?;
        ioctl::blksszget(fd, &mut lss).map_err(io::Error::from)?;
        ioctl::blkpbszget(fd, &mut pss).map_err(io::Error::from)?;
    }
    let lss =
        u32::try_from(lss).map_err(|_| io::Error::other(format!("BLKSSZGET returned {lss}")))?;
    Ok((size, lss, pss))
}

/// The O_DIRECT alignment a file needs, from `statx(STATX_DIOALIGN)`: `(memory, offset)`.
/// `None` where the kernel or the filesystem does not report it.
pub fn dio_alignment(file: &File) -> io::Result<Option<(u32, u32)>> {
    // SAFETY: `statx` is plain old data; all-zero is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    let empty = c"";
    // SAFETY: the descriptor is open, the path is a valid NUL-terminated empty string used
    // with AT_EMPTY_PATH, and `stx` is a valid, writable `statx`.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EINVAL) => Ok(None),
            _ => Err(err),
        };
    }
    if stx.stx_mask & libc::STATX_DIOALIGN == 0 || stx.stx_dio_offset_align == 0 {
        return Ok(None);
    }
    Ok(Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buf_is_aligned_and_zeroed() {
        for &(len, align) in &[(0usize, 512usize), (1, 512), (4096, 4096), (65536, 4096)] {
            let mut b = AlignedBuf::zeroed(len, align);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % align, 0);
            assert!(b.iter().all(|&x| x == 0));
            b.fill(7);
            assert!(b.iter().all(|&x| x == 7));
        }
    }
}

/// A global allocator that puts large blocks on transparent huge pages and reuses them: the
/// system allocator, except that a block of at least its threshold ([`HugeAlloc::min_size`])
/// is an anonymous mapping that starts at a 2 MiB boundary, is a whole number of 2 MiB long
/// and is advised for transparent huge pages (`MADV_HUGEPAGE`); a freed one is kept for the
/// next block of the same mapping length, up to a bound.
///
/// Why: an O_DIRECT request reaches the device as one request only if its buffer fits in the
/// segments one request takes. On 4 KiB pages a 1 MiB buffer is up to 256 segments (pages are
/// merged only where they happen to be adjacent), more than a loop device takes (128), and the
/// block layer split it into two or three requests; on a huge page it is physically contiguous
/// and goes as one, and the kernel pins it as one folio instead of 256 pages (results/2026-11-25-vm-minfs-mount/README.md, "Huge-page buffers in
/// the server"; docs/BUFFERS.md).
///
/// - [`HugeAlloc::new`] (threshold 2 MiB): the `minfs` binary's, for `minfs mount`'s request
///   buffers (fuser's receive buffer and the server's O_DIRECT buffer).
/// - [`HugeAlloc::for_lumps`] (threshold [`HugeAlloc::LUMP_MIN`], 256 KiB): for a program that
///   runs Cannyls in-process (`minfs-bench`, `minfs-cannyls`, an application on
///   `cannyls_adapter::MinfsNvm` or Cannyls' `FileNvm`). Cannyls allocates each lump's buffer
///   per operation, a `Vec<u8>` of the lump plus up to two blocks, and writes and reads the
///   device straight from it; with this allocator every lump of 256 KiB or more is on a huge
///   page (a 1 MiB lump: one request instead of two or three).
///
/// **Reuse, bounded.** A freed mapping (huge page and all) goes into a cache of at most
/// [`HugeAlloc::CACHE_SLOTS`] mappings and [`HugeAlloc::DEFAULT_CACHE_LIMIT`] bytes (32 MiB;
/// [`HugeAlloc::with_cache_limit`] sets another bound, 0 turns the cache off), and the next
/// block of the same mapping length takes it: a lump's put or get then costs no `mmap`, page
/// fault or `munmap`. A free that finds the cache full makes room by unmapping cached blocks of
/// other lengths, or else unmaps its own. [`HugeAlloc::trim`] unmaps everything cached.
///
/// **Memory.** A block in use takes its size rounded up to 2 MiB (a 1 MiB lump one 2 MiB huge
/// page, a 4 MiB one 6 MiB); on top of that at most the cache bound stays mapped.
///
/// **Where THP is `never`** (or disabled for the process) the advice is ignored and the blocks
/// are ordinary pages, reused all the same. A fresh mapping reads as zeros (the kernel's); a
/// reused one is zeroed by `alloc_zeroed` and left as it was by `alloc`, as `malloc` would.
///
/// ```
/// #[global_allocator]
/// static ALLOC: minfs::HugeAlloc = minfs::HugeAlloc::for_lumps();
/// # fn main() {
/// let lump = vec![7u8; 1 << 20]; // on a huge page, 2 MiB-aligned
/// assert_eq!(lump.as_ptr() as usize % (2 << 20), 0);
/// # }
/// ```
pub struct HugeAlloc {
    min: usize,
    cache_limit: usize,
    /// Bytes of the mappings in `slots`, plus any a `keep` has reserved and not yet stored.
    cached: AtomicUsize,
    /// Each 0 (empty) or a cached mapping: its start (a multiple of 2 MiB) plus its length in
    /// 2 MiB units (below 2^21, so it fits in the start's zero bits).
    slots: [AtomicUsize; HugeAlloc::CACHE_SLOTS],
    /// Counters for [`HugeAlloc::stats`].
    mapped: AtomicUsize,
    reused: AtomicUsize,
    unmapped: AtomicUsize,
}

/// What a [`HugeAlloc`] has done with its large blocks since it was made
/// ([`HugeAlloc::stats`]): a program can tell from it how often the cache served a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HugeAllocStats {
    /// Fresh mappings made (a large block the cache could not serve).
    pub mapped: usize,
    /// Large blocks served from the cache.
    pub reused: usize,
    /// Mappings unmapped (freed into a full cache, evicted, or trimmed).
    pub unmapped: usize,
}

/// The size from which [`HugeAlloc::new`] maps huge-page-aligned memory (2 MiB).
pub const HUGE_ALLOC_MIN: usize = HUGE;
const HUGE: usize = 2 << 20;
const PAGE: usize = 4096;

impl Default for HugeAlloc {
    fn default() -> HugeAlloc {
        HugeAlloc::new()
    }
}

impl HugeAlloc {
    /// How many freed mappings the cache holds at most.
    pub const CACHE_SLOTS: usize = 32;
    /// The cache's default bound in bytes (32 MiB: sixteen 1 MiB lumps' mappings, or five
    /// 4 MiB lumps').
    pub const DEFAULT_CACHE_LIMIT: usize = 32 << 20;
    /// [`HugeAlloc::for_lumps`]' threshold (256 KiB): Cannyls' lump buffers of 256 KiB and up.
    pub const LUMP_MIN: usize = 256 << 10;

    /// Blocks of 2 MiB or more on huge pages (the `minfs` binary's allocator); cache bound
    /// [`HugeAlloc::DEFAULT_CACHE_LIMIT`].
    pub const fn new() -> HugeAlloc {
        HugeAlloc {
            min: HUGE_ALLOC_MIN,
            cache_limit: HugeAlloc::DEFAULT_CACHE_LIMIT,
            cached: AtomicUsize::new(0),
            slots: [const { AtomicUsize::new(0) }; HugeAlloc::CACHE_SLOTS],
            mapped: AtomicUsize::new(0),
            reused: AtomicUsize::new(0),
            unmapped: AtomicUsize::new(0),
        }
    }

    /// Blocks of [`HugeAlloc::LUMP_MIN`] (256 KiB) or more on huge pages: for a program that
    /// runs Cannyls in-process, so that its lump buffers are.
    pub const fn for_lumps() -> HugeAlloc {
        HugeAlloc::new().with_min_size(HugeAlloc::LUMP_MIN)
    }

    /// This allocator with threshold `bytes` (at least one page, 4096): every block of that
    /// size or more takes at least 2 MiB.
    pub const fn with_min_size(mut self, bytes: usize) -> HugeAlloc {
        self.min = if bytes < PAGE { PAGE } else { bytes };
        self
    }

    /// This allocator with the cache bounded to `bytes` (0: no cache, every free unmaps).
    pub const fn with_cache_limit(mut self, bytes: usize) -> HugeAlloc {
        self.cache_limit = bytes;
        self
    }

    /// The threshold: blocks of this size or more are mapped on huge pages.
    pub fn min_size(&self) -> usize {
        self.min
    }

    /// Bytes of freed mappings kept for reuse now (at most the cache bound).
    pub fn cached_bytes(&self) -> usize {
        self.cached.load(Ordering::Acquire)
    }

    /// How many large blocks were freshly mapped, served from the cache, and unmapped.
    pub fn stats(&self) -> HugeAllocStats {
        HugeAllocStats {
            mapped: self.mapped.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            unmapped: self.unmapped.load(Ordering::Relaxed),
        }
    }

    /// Unmaps every cached mapping (blocks in use are not touched).
    pub fn trim(&self) {
        for slot in &self.slots {
            let entry = slot.swap(0, Ordering::AcqRel);
            if entry != 0 {
                let len = entry_len(entry);
                self.cached.fetch_sub(len, Ordering::AcqRel);
                // SAFETY: the slot owned this mapping (see `slots`), and the swap took it out.
                unsafe { self.unmap(entry_start(entry), len) };
            }
        }
    }

    fn is_huge(&self, layout: Layout) -> bool {
        layout.size() >= self.min && layout.align() <= HUGE
    }

    /// A cached mapping of `len` bytes, taken out of the cache.
    fn take(&self, len: usize) -> Option<*mut u8> {
        for slot in &self.slots {
            let entry = slot.load(Ordering::Acquire);
            if entry != 0
                && entry_len(entry) == len
                && slot
                    .compare_exchange(entry, 0, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                self.cached.fetch_sub(len, Ordering::AcqRel);
                self.reused.fetch_add(1, Ordering::Relaxed);
                return Some(entry_start(entry));
            }
        }
        None
    }

    /// Puts the mapping `start`/`len` into the cache, or unmaps it when the cache is full.
    ///
    /// # Safety
    /// `start` must be a mapping of `len` bytes from `map` that nothing uses any more.
    unsafe fn keep(&self, start: *mut u8, len: usize) {
        let units = len / HUGE;
        if len <= self.cache_limit && units < HUGE {
            let entry = start as usize | units;
            for _ in 0..=HugeAlloc::CACHE_SLOTS {
                let reserved = self
                    .cached
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                        (c <= self.cache_limit - len).then_some(c + len)
                    })
                    .is_ok();
                if reserved {
                    let stored = self.slots.iter().any(|slot| {
                        slot.compare_exchange(0, entry, Ordering::AcqRel, Ordering::Relaxed)
                            .is_ok()
                    });
                    if stored {
                        return;
                    }
                    self.cached.fetch_sub(len, Ordering::AcqRel);
                }
                if !self.evict_other_than(len) {
                    break;
                }
            }
        }
        // SAFETY: the caller gives up the mapping.
        unsafe { self.unmap(start, len) }
    }

    /// Unmaps one cached mapping whose length is not `len`; false if there is none.
    fn evict_other_than(&self, len: usize) -> bool {
        for slot in &self.slots {
            let entry = slot.load(Ordering::Acquire);
            if entry != 0
                && entry_len(entry) != len
                && slot
                    .compare_exchange(entry, 0, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                let evicted = entry_len(entry);
                self.cached.fetch_sub(evicted, Ordering::AcqRel);
                // SAFETY: the slot owned this mapping, and the exchange took it out.
                unsafe { self.unmap(entry_start(entry), evicted) };
                return true;
            }
        }
        false
    }
}

impl HugeAlloc {
    /// [`map`], counted.
    fn map(&self, len: usize) -> *mut u8 {
        let p = map(len);
        if !p.is_null() {
            self.mapped.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    /// Unmaps a mapping from [`map`].
    ///
    /// # Safety
    /// `start`/`len` must be a whole mapping from `map` that nothing uses any more.
    unsafe fn unmap(&self, start: *mut u8, len: usize) {
        // SAFETY: the caller's guarantee.
        unsafe {
            libc::munmap(start.cast(), len);
        }
        self.unmapped.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for HugeAlloc {
    fn drop(&mut self) {
        self.trim();
    }
}

fn entry_start(entry: usize) -> *mut u8 {
    std::ptr::without_provenance_mut(entry & !(HUGE - 1))
}

fn entry_len(entry: usize) -> usize {
    (entry & (HUGE - 1)) * HUGE
}

/// The length of the mapping that holds a block of `size` bytes: `size` rounded up to 2 MiB.
fn map_len(size: usize) -> Option<usize> {
    size.checked_next_multiple_of(HUGE)
}

/// A fresh `len`-byte mapping (`len` a multiple of 2 MiB) starting at a 2 MiB boundary,
/// advised for huge pages; null if the kernel has none.
fn map(len: usize) -> *mut u8 {
    let Some(over) = len.checked_add(HUGE) else {
        return std::ptr::null_mut();
    };
    // SAFETY: an anonymous private mapping with no address hint touches no existing memory.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let start = base as usize;
    let aligned = start.next_multiple_of(HUGE);
    let head = aligned - start;
    let tail = over - head - len;
    // SAFETY: the trims unmap only pages of the fresh mapping outside the aligned range kept;
    // the advice only concerns that range.
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        // Only advice: where THP is off it fails or is ignored, and the memory still works.
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    aligned as *mut u8
}

// SAFETY: a large block (`is_huge`) is a mapping of `map_len(layout.size())` bytes (at least
// `layout.size()`) at a 2 MiB boundary (so aligned for any `layout.align() <= 2 MiB`), owned
// by exactly one party at a time: the caller from `alloc` to `dealloc`, or one cache slot
// (taken out by one successful exchange). `dealloc` and `realloc` find its length again from
// the layout, which the caller must pass unchanged, and `realloc` keeps a block in place only
// when the new layout maps to the same length. Everything else is the system allocator's.
unsafe impl alloc::GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.is_huge(layout) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { alloc::System.alloc(layout) };
        }
        let Some(len) = map_len(layout.size()) else {
            return std::ptr::null_mut();
        };
        self.take(len).unwrap_or_else(|| self.map(len))
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.is_huge(layout) {
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { alloc::System.alloc_zeroed(layout) };
        }
        let Some(len) = map_len(layout.size()) else {
            return std::ptr::null_mut();
        };
        match self.take(len) {
            Some(p) => {
                // SAFETY: a cached mapping of `len >= layout.size()` bytes, now ours alone.
                unsafe { std::ptr::write_bytes(p, 0, layout.size()) };
                p
            }
            // A fresh anonymous mapping reads as zeros.
            None => self.map(len),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to `layout.align()`, fits isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let (old_huge, new_huge) = (self.is_huge(layout), self.is_huge(new_layout));
        if !old_huge && !new_huge {
            // SAFETY: forwarded with the caller's guarantees; both blocks are the system's.
            return unsafe { alloc::System.realloc(ptr, layout, new_size) };
        }
        if old_huge && new_huge && map_len(layout.size()) == map_len(new_size) {
            // The mapping already holds the new size (and the new layout maps to it again).
            return ptr;
        }
        // SAFETY: `new_layout` is valid (above); the old block is readable for
        // `layout.size()` bytes and the new one writable for `new_size`; they do not overlap.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.is_huge(layout) {
            // A block that was allocated has a mapping length (`alloc` checked it).
            if let Some(len) = map_len(layout.size()) {
                // SAFETY: `ptr` is a `len`-byte mapping from `map` (see the impl), given up.
                unsafe { self.keep(ptr, len) }
            }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { alloc::System.dealloc(ptr, layout) }
        }
    }
}

#[cfg(test)]
mod huge_alloc_tests {
    use super::*;
    use std::alloc::GlobalAlloc;

    const MIB: usize = 1 << 20;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 1).unwrap()
    }

    fn stats(mapped: usize, reused: usize, unmapped: usize) -> HugeAllocStats {
        HugeAllocStats {
            mapped,
            reused,
            unmapped,
        }
    }

    #[test]
    fn huge_alloc_maps_large_blocks_zeroed_at_2_mib_boundaries() {
        for a in [HugeAlloc::new(), HugeAlloc::new().with_cache_limit(0)] {
            for (size, align) in [(2 * MIB, 4096), (3 * MIB + 512, 512), (16 * MIB + 4096, 8)] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero-size layout; the block is written within its size and
                // freed with the same layout.
                unsafe {
                    for zeroed in [true, false, true] {
                        let p = if zeroed {
                            a.alloc_zeroed(layout)
                        } else {
                            a.alloc(layout)
                        };
                        assert!(!p.is_null(), "{size} bytes");
                        assert_eq!(p as usize % HUGE, 0, "{size} bytes at {p:p}");
                        let block = std::slice::from_raw_parts_mut(p, size);
                        if zeroed {
                            assert!(block.iter().all(|&b| b == 0), "{size} bytes not zeroed");
                        }
                        block.fill(0xa5);
                        a.dealloc(p, layout);
                    }
                }
            }
        }
    }

    #[test]
    fn huge_alloc_advises_huge_pages() {
        let Some(mode) = testutil::thp_mode().filter(|mode| mode != "never") else {
            testutil::print_skip(
                module_path!(),
                "transparent huge pages are off or missing in this kernel",
            );
            return;
        };
        let a = HugeAlloc::for_lumps();
        for size in [4 * MIB, MIB + 8192] {
            // SAFETY: a non-zero-size layout, freed with the same layout.
            unsafe {
                let p = a.alloc_zeroed(layout(size));
                assert!(!p.is_null());
                let eligible = testutil::mappings("self")
                    .unwrap()
                    .iter()
                    .find(|m| (m.start..m.start + m.len).contains(&(p as usize)))
                    .map(|m| m.thp_eligible);
                a.dealloc(p, layout(size));
                assert_eq!(
                    eligible,
                    Some(true),
                    "THP mode {mode}: a block of {size} bytes is not eligible for huge pages"
                );
            }
        }
    }

    #[test]
    fn huge_alloc_realloc_keeps_the_bytes_across_the_threshold() {
        let a = HugeAlloc::new();
        let small = Layout::from_size_align(MIB, 4096).unwrap();
        // SAFETY: every block is used within its size and freed with its current layout.
        unsafe {
            let p = a.alloc(small);
            assert!(!p.is_null());
            for i in 0..MIB {
                *p.add(i) = (i % 251) as u8;
            }
            let big = a.realloc(p, small, 5 * MIB);
            assert!(!big.is_null());
            assert_eq!(big as usize % HUGE, 0);
            assert!((0..MIB).all(|i| *big.add(i) == (i % 251) as u8));
            let big_layout = Layout::from_size_align(5 * MIB, 4096).unwrap();
            let back = a.realloc(big, big_layout, MIB / 2);
            assert!(!back.is_null());
            assert!((0..MIB / 2).all(|i| *back.add(i) == (i % 251) as u8));
            a.dealloc(back, Layout::from_size_align(MIB / 2, 4096).unwrap());
        }
    }

    /// A block that grows or shrinks within the same 2 MiB-rounded length stays where it is
    /// (a `Vec` growing past the threshold does not copy at every step).
    #[test]
    fn huge_alloc_realloc_within_a_mapping_length_keeps_the_block() {
        let a = HugeAlloc::for_lumps();
        // SAFETY: every block is used within its size and freed with its current layout.
        unsafe {
            let p = a.alloc(layout(300 << 10));
            assert!(!p.is_null());
            p.write_bytes(3, 300 << 10);
            let q = a.realloc(p, layout(300 << 10), 2 * MIB);
            assert_eq!(q, p, "grown within its 2 MiB mapping");
            let r = a.realloc(q, layout(2 * MIB), 2 * MIB + 1);
            assert_ne!(r, q, "2 MiB + 1 needs a 4 MiB mapping");
            assert!((0..300 << 10).all(|i| *r.add(i) == 3));
            let s = a.realloc(r, layout(2 * MIB + 1), 3 * MIB);
            assert_eq!(s, r);
            a.dealloc(s, layout(3 * MIB));
        }
    }

    /// A freed block's mapping is handed out again for the next block of its length: the
    /// same address, `alloc_zeroed` zeroes it, and it is out of the cache while in use.
    #[test]
    fn huge_alloc_reuses_freed_mappings() {
        let a = HugeAlloc::for_lumps();
        // Cannyls' buffer for a 1 MiB lump at block size 4096.
        let lump = layout(MIB + 8191);
        // SAFETY: every block is used within its size and freed with its layout.
        unsafe {
            let p = a.alloc(lump);
            assert!(!p.is_null());
            p.write_bytes(0xa5, lump.size());
            assert_eq!(a.cached_bytes(), 0);
            a.dealloc(p, lump);
            assert_eq!(a.cached_bytes(), 2 * MIB);
            assert_eq!(a.stats(), stats(1, 0, 0), "a cached block stays mapped");
            // Another size of the same 2 MiB mapping length.
            let q = a.alloc_zeroed(layout(256 << 10));
            assert_eq!(q, p, "the cached mapping is reused");
            assert_eq!(a.stats(), stats(1, 1, 0));
            assert_eq!(a.cached_bytes(), 0);
            assert!(
                std::slice::from_raw_parts(q, 256 << 10)
                    .iter()
                    .all(|&b| b == 0),
                "alloc_zeroed zeroes a reused block"
            );
            q.write_bytes(0x5a, 256 << 10);
            // Two blocks at once: the second is a fresh mapping.
            let r = a.alloc(lump);
            assert!(!r.is_null() && r != q);
            assert_eq!(a.stats(), stats(2, 1, 0));
            a.dealloc(q, layout(256 << 10));
            a.dealloc(r, lump);
            assert_eq!(a.cached_bytes(), 4 * MIB);
            // A 4 MiB block does not take a 2 MiB mapping.
            let big = a.alloc(layout(4 * MIB));
            assert!(big != q && big != r);
            assert_eq!(a.stats(), stats(3, 1, 0));
            assert_eq!(a.cached_bytes(), 4 * MIB);
            a.dealloc(big, layout(4 * MIB));
            // Put and get, again and again: no new mapping.
            for _ in 0..100 {
                let put = a.alloc(lump);
                let get = a.alloc(lump);
                a.dealloc(put, lump);
                a.dealloc(get, lump);
            }
            assert_eq!(a.stats(), stats(3, 201, 0));
            assert_eq!(a.cached_bytes(), 8 * MIB);
            a.trim();
            assert_eq!(a.cached_bytes(), 0);
            assert_eq!(a.stats(), stats(3, 201, 3), "trim unmaps");
        }
    }

    /// The cache holds at most its byte bound and `CACHE_SLOTS` mappings; what does not fit is
    /// unmapped, and a free that finds it full of other lengths unmaps those to make room.
    #[test]
    fn huge_alloc_cache_is_bounded() {
        let a = HugeAlloc::for_lumps().with_cache_limit(6 * MIB);
        let lump = layout(MIB);
        // SAFETY: every block is used within its size and freed with its layout.
        unsafe {
            let blocks: Vec<*mut u8> = (0..5).map(|_| a.alloc(lump)).collect();
            assert!(blocks.iter().all(|p| !p.is_null()));
            for &p in &blocks {
                p.write_bytes(1, MIB);
                a.dealloc(p, lump);
            }
            assert_eq!(
                a.cached_bytes(),
                6 * MIB,
                "three of five 2 MiB mappings kept"
            );
            assert_eq!(a.stats(), stats(5, 0, 2), "the other two unmapped");
            // A 4 MiB block's mapping makes room for itself by unmapping two 2 MiB ones.
            let big = a.alloc(layout(4 * MIB));
            a.dealloc(big, layout(4 * MIB));
            assert_eq!(a.cached_bytes(), 6 * MIB);
            assert_eq!(a.stats(), stats(6, 0, 4));
            assert_eq!(a.alloc(layout(3 * MIB)), big, "the 4 MiB mapping is cached");
            a.dealloc(big, layout(3 * MIB));
            // Larger than the bound: never cached.
            let huge = a.alloc(layout(7 * MIB));
            a.dealloc(huge, layout(7 * MIB));
            assert_eq!(a.stats(), stats(7, 1, 5));
            assert_eq!(a.cached_bytes(), 6 * MIB);
        }
        drop(a);

        // The slot bound: with room for many more bytes, CACHE_SLOTS mappings at most.
        let a = HugeAlloc::for_lumps().with_cache_limit(1 << 30);
        let n = HugeAlloc::CACHE_SLOTS + 4;
        // SAFETY: as above.
        unsafe {
            let blocks: Vec<*mut u8> = (0..n).map(|_| a.alloc(lump)).collect();
            for &p in &blocks {
                a.dealloc(p, lump);
            }
            assert_eq!(a.cached_bytes(), HugeAlloc::CACHE_SLOTS * 2 * MIB);
            assert_eq!(a.stats(), stats(n, 0, 4));
        }
        drop(a);

        // Without a cache every free unmaps.
        let a = HugeAlloc::for_lumps().with_cache_limit(0);
        // SAFETY: as above.
        unsafe {
            let p = a.alloc(lump);
            a.dealloc(p, lump);
            let q = a.alloc(lump);
            a.dealloc(q, lump);
            assert_eq!(a.stats(), stats(2, 0, 2));
            assert_eq!(a.cached_bytes(), 0);
        }
    }

    /// Below the threshold blocks are the system allocator's (and never cached).
    #[test]
    fn huge_alloc_leaves_small_blocks_to_the_system_allocator() {
        let a = HugeAlloc::for_lumps();
        assert_eq!(a.min_size(), 256 << 10);
        assert_eq!(HugeAlloc::new().min_size(), 2 * MIB);
        assert_eq!(HugeAlloc::new().with_min_size(1).min_size(), 4096);
        // SAFETY: every block is freed with its layout.
        unsafe {
            let p = a.alloc(layout((256 << 10) - 1));
            assert!(!p.is_null());
            a.dealloc(p, layout((256 << 10) - 1));
            assert_eq!(a.stats(), stats(0, 0, 0));
            // Over-aligned beyond a huge page: the system allocator's too.
            let odd = Layout::from_size_align(MIB, 4 * MIB).unwrap();
            let q = a.alloc(odd);
            assert_eq!(q as usize % (4 * MIB), 0);
            a.dealloc(q, odd);
            assert_eq!(a.stats(), stats(0, 0, 0));
        }
    }

    /// Threads allocating and freeing at once never get the same block: each fills its block
    /// with its own byte and finds it unchanged before freeing it.
    #[test]
    fn huge_alloc_hands_each_block_to_one_thread() {
        let a = HugeAlloc::for_lumps().with_cache_limit(8 * MIB);
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let a = &a;
                s.spawn(move || {
                    for i in 0..200 {
                        let size = if i % 3 == 0 { 3 * MIB } else { MIB };
                        // SAFETY: the block is used within its size and freed with its layout.
                        unsafe {
                            let p = a.alloc(layout(size));
                            assert!(!p.is_null());
                            // Every page, so that a shared block would show.
                            for off in (0..size).step_by(4096) {
                                *p.add(off) = t;
                            }
                            std::thread::yield_now();
                            for off in (0..size).step_by(4096) {
                                assert_eq!(*p.add(off), t, "block {p:p} shared");
                            }
                            a.dealloc(p, layout(size));
                        }
                    }
                });
            }
        });
        assert!(a.cached_bytes() <= 8 * MIB);
    }

    /// Where transparent huge pages are off the blocks are ordinary pages and work as well:
    /// the test runs again in a child process with THP disabled for it (`PR_SET_THP_DISABLE`,
    /// the per-process equivalent of `never`).
    #[test]
    fn huge_alloc_works_where_thp_is_disabled() {
        const CHILD: &str = "MINFS_HUGE_ALLOC_THP_DISABLED_CHILD";
        const NAME: &str = "sys::huge_alloc_tests::huge_alloc_works_where_thp_is_disabled";
        if std::env::var_os(CHILD).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let text = testutil::output_text(&out);
            assert!(
                out.status.success() && text.contains("1 passed"),
                "the child failed:\n{text}"
            );
            assert!(text.contains("blocks on ordinary pages"), "{text}");
            return;
        }
        nix::sys::prctl::set_thp_disable(true).unwrap();
        let a = HugeAlloc::for_lumps();
        // SAFETY: every block is used within its size and freed with its layout.
        unsafe {
            let p = a.alloc_zeroed(layout(MIB + 8191));
            assert!(!p.is_null());
            assert_eq!(p as usize % HUGE, 0);
            let eligible = testutil::mappings("self")
                .unwrap()
                .iter()
                .find(|m| (m.start..m.start + m.len).contains(&(p as usize)))
                .map(|m| m.thp_eligible);
            assert_eq!(eligible, Some(false), "THP is not disabled in the child");
            let block = std::slice::from_raw_parts_mut(p, MIB + 8191);
            assert!(block.iter().all(|&b| b == 0));
            block.fill(9);
            a.dealloc(p, layout(MIB + 8191));
            let q = a.alloc_zeroed(layout(MIB));
            assert_eq!(q, p, "reused on ordinary pages too");
            assert!(std::slice::from_raw_parts(q, MIB).iter().all(|&b| b == 0));
            a.dealloc(q, layout(MIB));
            assert_eq!(a.stats(), stats(1, 1, 0));
        }
        println!("blocks on ordinary pages: allocated, zeroed, reused");
    }
}
