//! `minfs info`.

use std::process::ExitCode;

use anyhow::Context;

use super::{human, TargetArg};
use crate::{Filesystem, OpenMode};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArg,
}

/// `1790000000` → `"2026-09-21 14:13:20 UTC"` (proleptic Gregorian, no leap seconds).
pub(crate) fn time(t: u64) -> String {
    let (days, secs) = (t / 86_400, t % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let fs = Filesystem::open(&a.target.target, OpenMode::ReadOnly).context("info failed")?;
    super::note_mirror_slot(&fs, &a.target.target);
    let i = fs.info();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&i)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<(&str, String)> = vec![
        ("Filesystem magic", "MINFS-SB".into()),
        ("Filesystem UUID", i.uuid.clone()),
        // As tune2fs -l shows an empty volume name.
        (
            "Filesystem label",
            if i.label.is_empty() {
                "<none>".into()
            } else {
                i.label.clone()
            },
        ),
        ("Format version", i.format_version.to_string()),
        ("Generation", i.generation.to_string()),
        ("Active slot", format!("{:?}", i.active_slot)),
        (
            "Superblock offsets",
            format!("{}, {}", i.superblock_offsets[0], i.superblock_offsets[1]),
        ),
        ("Block size", i.block_size.to_string()),
        ("Logical sector size", i.logical_sector_size.to_string()),
        ("Physical sector size", i.physical_sector_size.to_string()),
        ("Total bytes", human(i.total_bytes)),
        ("Data start", i.data_start.to_string()),
        ("Block count", i.block_count.to_string()),
        ("Free blocks", i.free_blocks.to_string()),
        ("Free bytes", human(i.free_bytes)),
        (
            "File count",
            format!("{} (at most {})", i.files.len(), i.max_files),
        ),
        ("Filesystem created", time(i.created)),
        ("Last update", time(i.updated)),
    ];
    for (k, v) in rows {
        println!("{:<26}{v}", format!("{k}:"));
    }
    for f in &i.files {
        let ext: Vec<String> = f
            .extents
            .iter()
            .map(|e| format!("{}+{}", e.offset, e.length))
            .collect();
        println!(
            "{:<26}{} bytes, extents {}",
            format!("File {:?}:", f.name),
            f.size,
            ext.join(" ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates() {
        assert_eq!(super::time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::time(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::time(1_790_000_000), "2026-09-21 14:13:20 UTC");
    }
}
