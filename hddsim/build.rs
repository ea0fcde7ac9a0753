//! Builds every drive profile in `profiles/` into the library (`profile::BUILT_IN`), so that an
//! installed `hddsim` or `minfs-bench` finds them without the checkout. A profile added to
//! `profiles/` is built in with no other change.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("profiles");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut profiles: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, p.display().to_string())
        })
        .collect();
    profiles.sort();
    let mut code = String::from("&[\n");
    for (stem, path) in &profiles {
        writeln!(code, "    ({stem:?}, include_str!({path:?})),").unwrap();
    }
    code.push(']');
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("built_in_profiles.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
