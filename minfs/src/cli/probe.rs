//! `minfs probe`: what udev's rule runs to recognise minfs (libblkid cannot).

use std::process::ExitCode;

use super::TargetArg;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print udev properties (KEY=VALUE lines: ID_FS_TYPE=minfs, ID_FS_USAGE, ID_FS_UUID,
    /// ID_FS_UUID_ENC, ID_FS_LABEL, ID_FS_LABEL_ENC, ID_FS_VERSION) for IMPORT{program}.
    #[arg(long)]
    export: bool,
    #[command(flatten)]
    target: TargetArg,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    // Not minfs, unreadable, or gone: nothing to say, and not an error for udev.
    let Some(sb) = crate::probe::probe(&a.target.target) else {
        return Ok(ExitCode::SUCCESS);
    };
    let props = crate::probe::udev_properties(&sb);
    if a.export {
        for (k, v) in props {
            println!("{k}={v}");
        }
    } else {
        let get = |k: &str| props.iter().find(|p| p.0 == k).map(|p| p.1.clone());
        println!(
            "{}: TYPE=\"minfs\" UUID=\"{}\"{} VERSION=\"{}\"",
            a.target.target.display(),
            get("ID_FS_UUID").unwrap_or_default(),
            get("ID_FS_LABEL")
                .map(|_| format!(" LABEL=\"{}\"", sb.label))
                .unwrap_or_default(),
            get("ID_FS_VERSION").unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}
