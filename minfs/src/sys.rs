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
