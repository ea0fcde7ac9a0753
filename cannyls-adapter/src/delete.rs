//! Deleting named lumps from one Cannyls storage in a minfs file (`minfs-cannyls delete`).
//!
//! What an operator does after a scrub named lumps over unreadable sectors, where the
//! application above Cannyls repairs a lump that is *absent* but not one that is *unreadable*
//! (FrugalOS 1.2.1: docs/RELIABILITY.md, "Scrubbing"): delete those lumps on that storage, so
//! that the application puts them again from its other copies.
//!
//! The storage is opened read-write through [`MinfsNvm::open`], so the target's lock is taken
//! (a target another process holds — a `minfs mount`, a running FrugalOS through the adapter —
//! is refused with [`DeleteError::Open`] carrying [`minfs::Error::Locked`] or
//! [`minfs::Error::Busy`]). Every named lump is looked up first; if any is absent nothing is
//! deleted ([`DeleteError::Absent`]). Then each is deleted and the journal synced
//! (`journal_sync`) before the storage is closed, so the deletes are durable on return. The
//! lumps' data blocks are not read: a lump over unreadable sectors deletes like any other.

use std::path::Path;

use cannyls::lump::LumpId;
use cannyls::storage::StorageBuilder;

use crate::MinfsNvm;

/// Why [`delete_lumps`] deleted nothing (or, for [`DeleteError::Cannyls`], may have stopped
/// part way; the journal is synced only after the last delete).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeleteError {
    /// The storage could not be opened: the target or file is missing, the target is in use
    /// ([`minfs::Error::Locked`], [`minfs::Error::Busy`]), the file holds no storage, or its
    /// journal cannot be read.
    #[error("{0}")]
    Open(#[source] crate::Error),
    /// Cannyls refused the storage or a delete (its message).
    #[error("{target}: file {file:?}: Cannyls: {detail}")]
    Cannyls {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// Cannyls' error, as text.
        detail: String,
    },
    /// Some of the lumps named are not in the storage: nothing was deleted.
    #[error(
        "{target}: file {file:?}: no such lump{}: {}; nothing deleted",
        if .ids.len() == 1 { "" } else { "s" },
        .ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
    )]
    Absent {
        /// The minfs target.
        target: String,
        /// The minfs file.
        file: String,
        /// The lumps named that the storage does not hold.
        ids: Vec<LumpId>,
    },
}

/// A lump [`delete_lumps`] deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The lump.
    pub id: LumpId,
    /// Its size as Cannyls' index records it (`LumpHeader::approximate_data_size`: whole
    /// blocks for a lump in the data region, exact for an embedded one).
    pub approximate_size: u32,
}

/// Parses a lump id as `minfs-cannyls` prints it: 1 to 32 hexadecimal digits (leading zeros
/// may be left out). The error names the text and what is wrong with it.
pub fn parse_lump_id(s: &str) -> Result<LumpId, String> {
    if s.is_empty() {
        return Err("an empty lump id (expected 1 to 32 hexadecimal digits)".to_string());
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "lump id {s:?}: {c:?} is not a hexadecimal digit (expected 1 to 32 of them, as \
             `minfs-cannyls lumps` prints ids)"
        ));
    }
    if s.len() > 32 {
        return Err(format!(
            "lump id {s:?}: {} digits, more than the 32 of a 128-bit id",
            s.len()
        ));
    }
    u128::from_str_radix(s, 16)
        .map(LumpId::new)
        .map_err(|e| format!("lump id {s:?}: {e}"))
}

/// Deletes the lumps `ids` (duplicates count once) from the Cannyls storage in `file` of the
/// minfs filesystem on `target`, all or none: see the [module docs](self).
pub fn delete_lumps(
    target: &Path,
    file: &str,
    ids: &[LumpId],
) -> Result<Vec<Deleted>, DeleteError> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids.dedup();
    let t = target.display().to_string();
    let cannyls_err = |e: cannyls::Error| DeleteError::Cannyls {
        target: t.clone(),
        file: file.to_string(),
        // trackable's text ends in a multi-line HISTORY: the first part names the error.
        detail: e
            .to_string()
            .split("\nHISTORY")
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    };
    let nvm = MinfsNvm::open(target, file).map_err(DeleteError::Open)?;
    let mut storage = StorageBuilder::new().open(nvm).map_err(cannyls_err)?;
    let mut found = Vec::new();
    let mut absent = Vec::new();
    for id in &ids {
        match storage.head(id) {
            Some(h) => found.push(Deleted {
                id: *id,
                approximate_size: h.approximate_data_size,
            }),
            None => absent.push(*id),
        }
    }
    if !absent.is_empty() {
        return Err(DeleteError::Absent {
            target: t.clone(),
            file: file.to_string(),
            ids: absent,
        });
    }
    for d in &found {
        let was = storage.delete(&d.id).map_err(cannyls_err)?;
        debug_assert!(was, "looked up just before");
    }
    storage.journal_sync().map_err(cannyls_err)?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lump_ids_parse_as_printed_and_bad_ones_are_named() {
        let id = LumpId::new(0x0100_0000_0000_0000_0000_0000_0000_002a);
        assert_eq!(parse_lump_id(&id.to_string()).unwrap(), id);
        assert_eq!(parse_lump_id("2a").unwrap(), LumpId::new(42));
        assert_eq!(parse_lump_id("2A").unwrap(), LumpId::new(42));
        let e = parse_lump_id("12g4").unwrap_err();
        assert!(e.contains("\"12g4\"") && e.contains("'g'"), "{e}");
        let e = parse_lump_id("+12").unwrap_err();
        assert!(e.contains("'+'"), "{e}");
        let e = parse_lump_id(&"1".repeat(33)).unwrap_err();
        assert!(e.contains("33 digits"), "{e}");
        assert!(parse_lump_id("").unwrap_err().contains("empty"));
    }
}
