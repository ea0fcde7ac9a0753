//! Helpers shared by the model tests (`model.rs`, `rules.rs`): the shipped profiles and
//! requests built field by field.
#![allow(dead_code)]

use hddsim::model::DriveRequest;
use hddsim::profile::{self, Profile};
use hddsim::trace::ReqOp;

pub fn drive512() -> Profile {
    profile::load("st1000dm003").unwrap()
}

/// The same drive with the first revision's write-hit rules (keep, merge).
pub fn drive512_merge() -> Profile {
    profile::load("st1000dm003-merge").unwrap()
}

pub fn drive4k() -> Profile {
    profile::load("st1000dm003-4kn").unwrap()
}

pub fn req(op: ReqOp, sector: u64, sectors: u64) -> DriveRequest {
    DriveRequest::new(op, sector, sectors)
}

pub fn w(sector: u64, sectors: u64) -> DriveRequest {
    req(ReqOp::Write, sector, sectors)
}

pub fn fua(sector: u64, sectors: u64) -> DriveRequest {
    DriveRequest {
        fua: true,
        ..w(sector, sectors)
    }
}

pub fn r(sector: u64, sectors: u64) -> DriveRequest {
    req(ReqOp::Read, sector, sectors)
}

pub fn flush() -> DriveRequest {
    req(ReqOp::Flush, 0, 0)
}
