//! Everything `unsafe` in minfs lives here: the aligned buffer used for O_DIRECT I/O, the
//! block-device ioctls and `statx`. The rest of the crate is `#![deny(unsafe_code)]`.
#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::fs::File;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;

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

/// The global allocator of the `minfs` binary: the system allocator, except that an
/// allocation of 2 MiB or more is its own anonymous mapping, aligned to 2 MiB and advised for
/// transparent huge pages (`MADV_HUGEPAGE`).
///
/// Why: `minfs mount` moves each request's data through two large buffers (fuser's receive
/// buffer and the server's O_DIRECT buffer). On 4 KiB pages a 1 MiB request is 256 scattered
/// segments, more than a device takes in one request (a loop device 128), so the block layer
/// split each lump into two or three device requests; on a huge page it is one request, and
/// the kernel pins the buffer as one folio instead of 256 pages (results/2026-11-25-vm-minfs-
/// mount/README.md, "Huge-page buffers in the server"). Where the system's THP setting is
/// `never`, the advice is ignored and the memory is ordinary pages. The mapping is
/// zero-filled by the kernel and touched only where written, like a large `calloc`.
///
/// A program that serves a mount itself (`minfs::fuse::Server`) gets the same with
/// `#[global_allocator] static ALLOC: minfs::HugeAlloc = minfs::HugeAlloc;`.
pub struct HugeAlloc;

/// The size from which [`HugeAlloc`] maps huge-page-aligned memory.
pub const HUGE_ALLOC_MIN: usize = 2 << 20;
const HUGE: usize = 2 << 20;

impl HugeAlloc {
    fn is_huge(layout: Layout) -> bool {
        layout.size() >= HUGE_ALLOC_MIN && layout.align() <= HUGE
    }

    fn map_len(layout: Layout) -> usize {
        layout.size().next_multiple_of(4096)
    }

    /// A `map_len(layout)`-byte mapping starting at a 2 MiB boundary, or null.
    unsafe fn map(layout: Layout) -> *mut u8 {
        let len = Self::map_len(layout);
        let Some(over) = len.checked_add(HUGE) else {
            return std::ptr::null_mut();
        };
        // SAFETY (of the calls below): an anonymous private mapping with no address hint; the
        // trims unmap only pages of that fresh mapping outside the aligned range kept.
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
}

// SAFETY: large blocks are fresh private mappings of at least `layout.size()` bytes at a
// 2 MiB boundary (so aligned for any `layout.align() <= 2 MiB`), unmapped only in `dealloc`
// with the same length; everything else is the system allocator's, unchanged.
unsafe impl alloc::GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if Self::is_huge(layout) {
            // SAFETY: see the impl.
            unsafe { Self::map(layout) }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { alloc::System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if Self::is_huge(layout) {
            // SAFETY: see the impl; a fresh anonymous mapping reads as zeros.
            unsafe { Self::map(layout) }
        } else {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { alloc::System.alloc_zeroed(layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `new_size`, rounded up to `layout.align()`, fits isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !Self::is_huge(layout) && !Self::is_huge(new_layout) {
            // SAFETY: forwarded with the caller's guarantees; both blocks are the system's.
            return unsafe { alloc::System.realloc(ptr, layout, new_size) };
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
        if Self::is_huge(layout) {
            // SAFETY: `ptr` came from `map(layout)` (same layout, so the same length).
            unsafe {
                libc::munmap(ptr.cast(), Self::map_len(layout));
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

    #[test]
    fn huge_alloc_maps_large_blocks_zeroed_at_2_mib_boundaries() {
        for (size, align) in [(2 * MIB, 4096), (3 * MIB + 512, 512), (16 * MIB + 4096, 8)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: a non-zero-size layout; the block is written within its size and freed
            // with the same layout.
            unsafe {
                for zeroed in [true, false] {
                    let p = if zeroed {
                        HugeAlloc.alloc_zeroed(layout)
                    } else {
                        HugeAlloc.alloc(layout)
                    };
                    assert!(!p.is_null(), "{size} bytes");
                    assert_eq!(p as usize % HUGE, 0, "{size} bytes at {p:p}");
                    let block = std::slice::from_raw_parts_mut(p, size);
                    if zeroed {
                        assert!(block.iter().all(|&b| b == 0), "{size} bytes not zeroed");
                    }
                    block.fill(0xa5);
                    HugeAlloc.dealloc(p, layout);
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
        let layout = Layout::from_size_align(4 * MIB, 4096).unwrap();
        // SAFETY: a non-zero-size layout, freed with the same layout.
        unsafe {
            let p = HugeAlloc.alloc_zeroed(layout);
            assert!(!p.is_null());
            let eligible = testutil::mappings("self")
                .unwrap()
                .iter()
                .find(|m| (m.start..m.start + m.len).contains(&(p as usize)))
                .map(|m| m.thp_eligible);
            HugeAlloc.dealloc(p, layout);
            assert_eq!(
                eligible,
                Some(true),
                "THP mode {mode}: a 4 MiB block is not eligible for huge pages"
            );
        }
    }

    #[test]
    fn huge_alloc_realloc_keeps_the_bytes_across_the_threshold() {
        let small = Layout::from_size_align(MIB, 4096).unwrap();
        // SAFETY: every block is used within its size and freed with its current layout.
        unsafe {
            let p = HugeAlloc.alloc(small);
            assert!(!p.is_null());
            for i in 0..MIB {
                *p.add(i) = (i % 251) as u8;
            }
            let big = HugeAlloc.realloc(p, small, 5 * MIB);
            assert!(!big.is_null());
            assert_eq!(big as usize % HUGE, 0);
            assert!((0..MIB).all(|i| *big.add(i) == (i % 251) as u8));
            let big_layout = Layout::from_size_align(5 * MIB, 4096).unwrap();
            let back = HugeAlloc.realloc(big, big_layout, MIB / 2);
            assert!(!back.is_null());
            assert!((0..MIB / 2).all(|i| *back.add(i) == (i % 251) as u8));
            HugeAlloc.dealloc(back, Layout::from_size_align(MIB / 2, 4096).unwrap());
        }
    }
}
