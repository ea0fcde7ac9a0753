//! `docs/WORKLOADS.md` against the code: its two tables list every shipped workload
//! (`workloads/*.wl`) with the counts, bytes and capacities `minfs-bench check` computes
//! (at scale 1, and the capacity at `--scale 0.1` too, `scripts/compare.sh`'s default).

use std::collections::BTreeMap;
use std::path::Path;

use bencher_workloads::compare::format::thousands;
use bencher_workloads::run::capacity;
use bencher_workloads::{dsl, expand, GenerateOptions, Summary};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/WORKLOADS.md");
    std::fs::read_to_string(path).expect("docs/WORKLOADS.md is readable")
}

/// A byte count as the tables give it: `26,214,400,000 (24.4 GiB)`, `0`.
fn bytes(n: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    const GIB: f64 = (1u64 << 30) as f64;
    let x = n as f64;
    match n {
        0 => "0".to_string(),
        _ if x >= GIB => format!("{} ({:.1} GiB)", thousands(n), x / GIB),
        _ => format!("{} ({:.1} MiB)", thousands(n), x / MIB),
    }
}

struct Figures {
    seed: u64,
    summary: Summary,
    capacity: u64,
    capacity_tenth: u64,
}

fn figures(file: &Path) -> Figures {
    let src = std::fs::read(file).unwrap();
    let workload = dsl::parse_bytes(&file.display().to_string(), &src).unwrap();
    let at = |scale: f64| {
        let options = GenerateOptions {
            scale,
            ..GenerateOptions::default()
        };
        expand(&workload, &options).unwrap()
    };
    let full = at(1.0);
    assert_eq!(full.skipped, 0, "{}", file.display());
    Figures {
        seed: full.seed,
        summary: Summary::of(&full.ops),
        capacity: capacity::plan(&full.ops, 512).capacity,
        capacity_tenth: capacity::plan(&at(0.1).ops, 512).capacity,
    }
}

/// The rows the two tables must have, by workload name.
fn expected() -> BTreeMap<String, (String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut rows = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "wl") {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let f = figures(&path);
        let (s, o) = (&f.summary, &f.summary.operations);
        let counts = format!(
            "| `{name}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            f.seed,
            thousands(s.total_operations),
            thousands(s.new_puts),
            thousands(s.overwrites),
            thousands(o.embed),
            thousands(o.get),
            thousands(o.delete),
            thousands(o.delete_range),
            thousands(o.sync),
        );
        let sizes = format!(
            "| `{name}` | {} | {} | {} | {} | {} | {} |",
            bytes(s.put_bytes + s.embed_bytes),
            bytes(s.get_bytes),
            bytes(s.peak_live_bytes),
            thousands(s.peak_live_lumps),
            bytes(f.capacity),
            bytes(f.capacity_tenth),
        );
        rows.insert(name, (counts, sizes));
    }
    rows
}

#[test]
fn tables_match_what_check_computes() {
    let doc = doc();
    let rows = expected();
    assert!(rows.len() >= 10, "{} workloads", rows.len());
    let mut missing = Vec::new();
    for (name, (counts, sizes)) in &rows {
        for row in [counts, sizes] {
            if !doc.lines().any(|l| l.trim() == row) {
                missing.push(format!("{name}: {row}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/WORKLOADS.md lacks these rows (or has other figures):\n{}",
        missing.join("\n")
    );
    // No row for a workload that is not shipped.
    for line in doc.lines().filter(|l| l.starts_with("| `")) {
        let name = line[3..].split('`').next().unwrap();
        assert!(
            rows.contains_key(name),
            "a row for {name}, not in workloads/"
        );
    }
    // Each workload has its section.
    for name in rows.keys() {
        assert!(
            doc.contains(&format!("### `{name}`")),
            "no section for {name}"
        );
    }
}
