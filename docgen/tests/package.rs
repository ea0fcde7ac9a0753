//! The crates that can be published carry what crates.io shows and what `cargo package`
//! needs: a description, the workspace's license and both license files, their own README,
//! documentation, keywords and categories; a path dependency on another workspace crate has a
//! version (cargo package refuses it otherwise) and is publishable itself, except as a
//! dev-dependency without a version (cargo package drops those). `scripts/test.sh` packages
//! them for real (`cargo package`, each verified by building it from its package alone).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The crates that must be publishable, in the order they would be published.
const PUBLISHED: &[&str] = &[
    "minfs",
    "minfs-devguard",
    "hddsim",
    "cannyls-adapter",
    "bencher-workloads",
];

fn metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "{}", testutil::output_text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn publishable(pkg: &Value) -> bool {
    // `publish = false` is an empty list of registries.
    !pkg["publish"].as_array().is_some_and(|r| r.is_empty())
}

/// What is missing or wrong in the workspace's packages, one line each.
fn problems(meta: &Value) -> Vec<String> {
    let packages: BTreeMap<String, &Value> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p))
        .collect();
    let mut found = Vec::new();
    for name in PUBLISHED {
        match packages.get(*name) {
            Some(p) if publishable(p) => {}
            Some(_) => found.push(format!("{name}: publish = false")),
            None => found.push(format!("{name}: not a workspace package")),
        }
    }
    for (name, pkg) in &packages {
        if !publishable(pkg) {
            continue;
        }
        let dir = Path::new(pkg["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .to_path_buf();
        for field in ["description", "documentation", "readme"] {
            if pkg[field].as_str().is_none_or(str::is_empty) {
                found.push(format!("{name}: no {field}"));
            }
        }
        if pkg["license"].as_str() != Some("MIT OR Apache-2.0") {
            found.push(format!("{name}: license {}", pkg["license"]));
        }
        if let Some(readme) = pkg["readme"].as_str() {
            let readme = dir.join(readme);
            if readme.parent() != Some(dir.as_path()) || !readme.is_file() {
                found.push(format!(
                    "{name}: readme {} is not its own",
                    readme.display()
                ));
            }
        }
        for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
            if !dir.join(file).is_file() {
                found.push(format!("{name}: no {file}"));
            }
        }
        for list in ["keywords", "categories"] {
            let n = pkg[list].as_array().map_or(0, Vec::len);
            if !(1..=5).contains(&n) {
                found.push(format!("{name}: {n} {list} (crates.io takes 1 to 5)"));
            }
        }
        for dep in pkg["dependencies"].as_array().unwrap() {
            if dep["path"].is_null() {
                continue;
            }
            let dep_name = dep["name"].as_str().unwrap();
            let dev = dep["kind"].as_str() == Some("dev");
            let versioned = dep["req"].as_str() != Some("*");
            let dep_publishable = packages.get(dep_name).is_some_and(|p| publishable(p));
            if dev && !versioned {
                continue; // dropped by cargo package
            }
            if !versioned {
                found.push(format!(
                    "{name}: path dependency {dep_name} without a version"
                ));
            } else if !dep_publishable {
                found.push(format!(
                    "{name}: depends on {dep_name}, which is not published"
                ));
            }
        }
    }
    found
}

#[test]
fn the_published_crates_carry_their_metadata() {
    let found = problems(&metadata());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The check sees what it guards: a manifest without a readme, a dependency on an unpublished
/// crate and one without a version are each named.
#[test]
fn the_metadata_check_finds_what_is_missing() {
    let mut meta = metadata();
    let packages = meta["packages"].as_array_mut().unwrap();
    let find = |packages: &mut Vec<Value>, name: &str| -> usize {
        packages.iter().position(|p| p["name"] == name).unwrap()
    };
    let minfs = find(packages, "minfs");
    packages[minfs]["readme"] = Value::Null;
    let devguard = find(packages, "minfs-devguard");
    packages[devguard]["publish"] = Value::Array(vec![]);
    let hddsim = find(packages, "hddsim");
    let deps = packages[hddsim]["dependencies"].as_array_mut().unwrap();
    let dep = deps.iter_mut().find(|d| d["name"] == "minfs").unwrap();
    dep["req"] = "*".into();
    let found = problems(&meta);
    for expected in [
        "minfs: no readme",
        "minfs-devguard: publish = false",
        "hddsim: depends on minfs-devguard, which is not published",
        "hddsim: path dependency minfs without a version",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "not found: {expected}\nin: {found:#?}"
        );
    }
}
