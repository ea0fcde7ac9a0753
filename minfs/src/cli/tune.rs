//! `minfs tune`: change the label or the UUID after mkfs (as tune2fs -L/-U and xfs_admin).

use std::process::ExitCode;

use anyhow::Context;

use super::TargetArg;
use crate::{Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("change").required(true).multiple(true).args(["label", "uuid"])))]
pub struct Args {
    /// New label (up to 32 bytes of UTF-8; "" clears it).
    #[arg(short = 'L', long, value_name = "LABEL")]
    label: Option<String>,
    /// New UUID: a UUID such as 0b5d6ea8-2d4c-4a4e-9d1e-3b8f6d7a9c10, `random` (version 4) or
    /// `time` (time-ordered, version 7).
    #[arg(short = 'U', long, value_name = "UUID", value_parser = parse_uuid)]
    uuid: Option<[u8; 16]>,
    #[command(flatten)]
    target: TargetArg,
}

/// `random`, `time` or a UUID string.
fn parse_uuid(s: &str) -> Result<[u8; 16], String> {
    match s {
        "random" => Ok(*uuid::Uuid::new_v4().as_bytes()),
        "time" => Ok(*uuid::Uuid::now_v7().as_bytes()),
        _ => uuid::Uuid::parse_str(s)
            .map(|u| *u.as_bytes())
            .map_err(|e| {
                format!("{s:?} is not a UUID (like 0b5d6ea8-2d4c-4a4e-9d1e-3b8f6d7a9c10), `random` or `time`: {e}")
            }),
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let t = a.target.target.display();
    // A read-write open: refused while mounted or open read-write elsewhere (flock, O_EXCL).
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadWrite).context("tune failed")?;
    let before = fs.info();
    fs.set_label_and_uuid(a.label.as_deref(), a.uuid)
        .context("tune failed")?;
    fs.flush().context("tune failed")?;
    let after = fs.info();
    if a.label.is_some() {
        println!("{t}: label {:?} -> {:?}", before.label, after.label);
    }
    if a.uuid.is_some() {
        println!("{t}: UUID {} -> {}", before.uuid, after.uuid);
    }
    Ok(ExitCode::SUCCESS)
}
