//! Reliability suite 5 (`minfs-bench`): bad input. Every case runs the real binary and checks
//! that the exit code is the documented one (README, `src/cli/mod.rs`, `src/cli/run.rs`: 1 a
//! failure — an unreadable workload, a backend that cannot be made ready, an output file that
//! cannot be written; 2 a usage error — a malformed `--backend` spec, a bad option value — or a
//! refused workload — a parse error as `FILE:LINE:COL`, an expansion past `--max-ops`), that
//! the message names the offending thing (the file and position, the spec, the path, the
//! value) without control characters or a panic, and that nothing changed: the minfs image, the
//! workload file and the backend's target keep their bytes, size, allocated blocks and mode,
//! and a path that did not exist still does not.
//!
//! A malformed workload is tried with `check` and with `run` on three backends (memory, a
//! minfs image, a `file:` path that does not exist yet): it must be refused before any backend
//! is touched.
//!
//! Not a case: `file:DIR/x` with a DIR that does not exist. Cannyls' `FileNvm::create` makes
//! the missing directories and the run goes ahead (`tests/run.rs` relies on it), so it is not
//! bad input by the current definition.
//!
//! The single test `bad_input_cases` runs the table and prints the counts line last; the test
//! after it is the regression for the bug this suite found.

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use assert_cmd::Command;

const MIB: u64 = 1 << 20;

/// What a path holds, for "unchanged" checks.
#[derive(Debug, PartialEq, Eq)]
enum State {
    Missing,
    Dir(Vec<OsString>),
    File {
        len: u64,
        blocks: u64,
        mode: u32,
        bytes: Vec<u8>,
    },
}

fn state(p: &Path) -> State {
    match std::fs::symlink_metadata(p) {
        Err(_) => State::Missing,
        Ok(m) if m.is_dir() => {
            let mut names: Vec<OsString> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            State::Dir(names)
        }
        // Large sparse files (the over-16-MiB workload) are compared by size and blocks.
        Ok(m) if m.len() > 64 * MIB => State::File {
            len: m.len(),
            blocks: m.blocks(),
            mode: m.mode(),
            bytes: Vec::new(),
        },
        Ok(m) => State::File {
            len: m.len(),
            blocks: m.blocks(),
            mode: m.mode(),
            bytes: std::fs::read(p).unwrap(),
        },
    }
}

fn describe(s: &State) -> String {
    match s {
        State::Missing => "missing".into(),
        State::Dir(n) => format!("directory of {} entries", n.len()),
        State::File {
            len, blocks, mode, ..
        } => format!("file of {len} bytes, {blocks} blocks, mode {mode:o}"),
    }
}

struct Case {
    what: String,
    args: Vec<OsString>,
    code: i32,
    needles: Vec<String>,
    watch: Vec<PathBuf>,
    unprivileged: bool,
}

fn os(s: impl AsRef<std::ffi::OsStr>) -> OsString {
    s.as_ref().to_os_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn case(what: impl Into<String>, args: Vec<OsString>, code: i32, needles: &[&str]) -> Case {
    Case {
        what: what.into(),
        args,
        code,
        needles: needles.iter().map(|n| n.to_string()).collect(),
        watch: Vec::new(),
        unprivileged: false,
    }
}

impl Case {
    fn watch(mut self, p: &Path) -> Case {
        self.watch.push(p.to_path_buf());
        self
    }
}

#[derive(Debug, Default)]
struct Counts {
    cases: u64,
    skipped: u64,
    wrong_codes: u64,
    unclear: u64,
    changed: u64,
    panics: u64,
    failures: Vec<String>,
}

/// Why `msg` is not a clear message for `c`, if it is not.
fn unclear(c: &Case, msg: &str, code: Option<i32>) -> Option<String> {
    if msg.trim().is_empty() {
        return Some("no message".into());
    }
    for n in &c.needles {
        if !msg.contains(n.as_str()) {
            return Some(format!("does not name {n:?}"));
        }
    }
    // A parse error: `FILE:LINE:COL: message` on the first line.
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let first = msg.lines().next().unwrap_or("");
    let parse_error = first.match_indices(": ").any(|(i, _)| {
        let mut it = first[..i].rsplitn(3, ':');
        let (col, line) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
        it.next().is_some_and(|f| !f.is_empty()) && digits(col) && digits(line)
    });
    let ok = match code {
        Some(2) => {
            msg.starts_with("error: ") || msg.starts_with("minfs-bench: error: ") || parse_error
        }
        _ => msg.starts_with("minfs-bench: error: "),
    };
    if !ok {
        return Some("not a `minfs-bench: error:`, usage or parse error".into());
    }
    if let Some(ch) = msg
        .chars()
        .find(|&ch| ch.is_control() && ch != '\n' && ch != '\t')
    {
        return Some(format!("holds the control character {ch:?}"));
    }
    None
}

fn run_case(c: &Case, runner: &Result<Vec<OsString>, String>, n: &mut Counts) {
    let bin = assert_cmd::cargo::cargo_bin("minfs-bench");
    let before: Vec<State> = c.watch.iter().map(|p| state(p)).collect();
    let mut cmd = match (c.unprivileged, runner) {
        (true, Err(why)) => {
            n.skipped += 1;
            testutil::print_skip(&c.what, why);
            return;
        }
        (true, Ok(prefix)) if !prefix.is_empty() => {
            let mut cmd = Command::new(&prefix[0]);
            cmd.args(&prefix[1..]).arg(&bin);
            cmd
        }
        _ => Command::new(&bin),
    };
    let out = cmd
        .args(&c.args)
        .env_remove("RUST_BACKTRACE")
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    n.cases += 1;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut fail = |kind: &str, why: String| {
        if n.failures.len() < 40 {
            n.failures.push(format!(
                "{kind}: {} (minfs-bench {:?}): {why}\n  stdout: {stdout}\n  stderr: {stderr}",
                c.what, c.args
            ));
        }
    };
    if stderr.contains("panicked")
        || stderr.contains("RUST_BACKTRACE")
        || out.status.code() == Some(101)
    {
        n.panics += 1;
        fail("panic", String::new());
    }
    if out.status.code() != Some(c.code) {
        n.wrong_codes += 1;
        fail(
            "wrong exit code",
            format!("{}, documented {}", out.status, c.code),
        );
    }
    if let Some(why) = unclear(c, &stderr, out.status.code()) {
        n.unclear += 1;
        fail("unclear message", why);
    }
    for (p, b) in c.watch.iter().zip(&before) {
        let a = state(p);
        if a != *b {
            n.changed += 1;
            fail(
                "changed",
                format!("{} was {}, is {}", p.display(), describe(b), describe(&a)),
            );
        }
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    dir: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::Builder::new()
            .prefix("minfs-bench-bad-input-")
            .tempdir_in(testutil::scratch_dir())
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().to_path_buf();
        Setup {
            _dir: dir,
            dir: path,
        }
    }
    fn p(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.p(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn minfs_image(&self, name: &str) -> PathBuf {
        let img = self.p(name);
        minfs::mkfs::mkfs(
            &img,
            &minfs::FormatOptions {
                size: Some(16 * MIB),
                ..Default::default()
            },
            false,
        )
        .unwrap();
        img
    }
}

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut r = testutil::XorShift(seed);
    (0..len).map(|_| r.next() as u8).collect()
}

fn build_cases(st: &Setup) -> Vec<Case> {
    let mut v = Vec::new();
    let img = st.minfs_image("minfs.img");
    let ok = st.file("ok.wl", b"# fine\nCommand { 100.times { New(1K); }; }\n");
    let fresh = st.p("fresh-storage"); // a file: path that must stay absent
    let deep = format!(
        "Command {{ {} New(1K); {} }}\n",
        "1.times { ".repeat(70),
        "}; ".repeat(70)
    );
    let mut binary = random_bytes(3000, 11);
    binary[0] = 0xff; // certainly not UTF-8
                      // (file name, content, code, what the message must hold besides the path)
    let workloads: Vec<(&str, Vec<u8>, i32, Vec<&str>)> = vec![
        (
            "syntax.wl",
            b"Command { New(1M) }\n".to_vec(),
            2,
            vec![":1:18: ", "expected `;`"],
        ),
        (
            "unknown-op.wl",
            b"Command {\n  Frobnicate;\n}\n".to_vec(),
            2,
            vec![":2:3: ", "`Frobnicate`"],
        ),
        (
            "huge-count.wl",
            b"Command { 1000000000.times { New(1K); }; }\n".to_vec(),
            2,
            vec!["1000000000 operations", "limit of 100000000", "--max-ops"],
        ),
        (
            "count-overflow.wl",
            b"Command { 99999999999999999999999.times { New(1K); }; }\n".to_vec(),
            2,
            vec![":1:11: ", "`99999999999999999999999` is too large"],
        ),
        (
            "unordered-overflow.wl",
            b"Unordered[18446744073709551615] { <100%> New(1K); }\n".to_vec(),
            2,
            vec!["operations", "--max-ops"],
        ),
        (
            "empty.wl",
            Vec::new(),
            2,
            vec![":1:1: ", "expected a section"],
        ),
        (
            "comments-only.wl",
            b"# nothing here\n\n   \n".to_vec(),
            2,
            vec![":4:1: ", "expected a section"],
        ),
        ("binary.wl", binary, 2, vec![":1:1: ", "not valid UTF-8"]),
        (
            "escape.wl",
            b"Command { \x1b[31m; }\n".to_vec(),
            2,
            vec![":1:11: ", "`\\u{1b}`"],
        ),
        (
            "nul.wl",
            b"Command { New(1K); }\0\0\n".to_vec(),
            2,
            vec![":1:21: ", "expected a section"],
        ),
        (
            "percent.wl",
            b"Ordered[10] { <150%> Get; }\n".to_vec(),
            2,
            vec![":1:16: ", "0 to 100", "150"],
        ),
        (
            "backwards.wl",
            b"Command { Get(5, 1); }\n".to_vec(),
            2,
            vec![":1:15: ", "backwards"],
        ),
        (
            "lump-limit.wl",
            b"Command { New(64M); }\n".to_vec(),
            2,
            vec![":1:15: ", "67108864 bytes", "over the limit"],
        ),
        (
            "embed-limit.wl",
            b"Command { Embed(65536); }\n".to_vec(),
            2,
            vec![":1:17: ", "65536"],
        ),
        (
            "deep.wl",
            deep.into_bytes(),
            2,
            vec!["nested more than 64 deep"],
        ),
        (
            "two-seeds.wl",
            b"Seed: 1;\nSeed: 2;\nCommand { New(1K); }\n".to_vec(),
            2,
            vec![":2:1: ", "second `Seed:`"],
        ),
        (
            "late-seed.wl",
            b"Command { New(1K); }\nSeed: 2;\n".to_vec(),
            2,
            vec![":2:1: ", "before the first section"],
        ),
    ];
    let mut files: Vec<(PathBuf, i32, Vec<String>)> = workloads
        .into_iter()
        .map(|(name, bytes, code, needles)| {
            let p = st.file(name, &bytes);
            let mut needles: Vec<String> = needles.iter().map(|n| n.to_string()).collect();
            needles.insert(0, s(&p));
            (p, code, needles)
        })
        .collect();
    let big = st.p("over-16-mib.wl");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 * MIB)
        .unwrap();
    let wdir = st.p("a-directory.wl");
    std::fs::create_dir(&wdir).unwrap();
    let missing = st.p("missing.wl");
    for (p, why) in [
        (&big, "larger than 16 MiB"),
        (&wdir, "Is a directory"),
        (&missing, "No such file or directory"),
    ] {
        files.push((
            p.clone(),
            1,
            vec![format!("cannot read {}", s(p)), why.into()],
        ));
    }
    for (wl, code, needles) in &files {
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        v.push(
            case(
                format!("check {}", wl.display()),
                vec![os("check"), os(wl)],
                *code,
                &needles,
            )
            .watch(wl),
        );
        for backend in [
            "memory".to_string(),
            format!("minfs:{}", s(&img)),
            format!("file:{}", s(&fresh)),
        ] {
            v.push(
                case(
                    format!("run {} on {backend}", wl.display()),
                    vec![
                        os("run"),
                        os("--workload"),
                        os(wl),
                        os("--backend"),
                        os(&backend),
                        os("--no-progress"),
                    ],
                    *code,
                    &needles,
                )
                .watch(wl)
                .watch(&img)
                .watch(&fresh),
            );
        }
    }
    v.push(
        case(
            "check --max-ops below the expansion",
            vec![os("check"), os("--max-ops"), os("10"), os(&ok)],
            2,
            &[&s(&ok), "100 operations", "limit of 10"],
        )
        .watch(&ok),
    );
    v.push(
        case(
            "run --max-ops below the expansion",
            vec![
                os("run"),
                os("--workload"),
                os(&ok),
                os("--backend"),
                os(format!("minfs:{}", s(&img))),
                os("--max-ops"),
                os("10"),
            ],
            2,
            &[&s(&ok), "100 operations", "limit of 10"],
        )
        .watch(&img),
    );
    // An unreadable workload.
    let secret = st.file("secret.wl", b"Command { New(1K); }\n");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o200)).unwrap();
    let mut c = case(
        "check of an unreadable workload, unprivileged",
        vec![os("check"), os(&secret)],
        1,
        &[&format!("cannot read {}", s(&secret)), "Permission denied"],
    )
    .watch(&secret);
    c.unprivileged = true;
    v.push(c);

    // --- backends: a good workload, a bad target --------------------------------------------
    let run = |backend: &str, extra: &[&str]| -> Vec<OsString> {
        let mut a = vec![
            os("run"),
            os("--workload"),
            os(&ok),
            os("--backend"),
            os(backend),
            os("--no-progress"),
        ];
        a.extend(extra.iter().map(os));
        a
    };
    let m = format!("minfs:{}", s(&img));
    for (spec, needle) in [
        ("nfs:/x", "unknown backend `nfs`"),
        ("file:", "needs a PATH"),
        ("file-prealloc:", "needs a PATH"),
        ("raw:", "needs a BLOCKDEV"),
        ("minfs:", "needs a TARGET"),
        ("memory:x", "takes no argument"),
        ("/var/tmp/x", "not a backend"),
        ("", "not a backend"),
    ] {
        v.push(case(
            format!("malformed backend {spec:?}"),
            run(spec, &[]),
            2,
            &[&format!("'{spec}'"), needle],
        ));
    }
    v.push(
        case(
            "minfs backend with an empty FILE",
            run(&format!("{m}:"), &[]),
            2,
            &[&format!("'{m}:'"), "FILE after TARGET"],
        )
        .watch(&img),
    );
    let zeros = st.file("zeros.img", &vec![0; 4 * MIB as usize]);
    let junk = st.file("junk", &random_bytes(MIB as usize, 5));
    let nodir = st.p("no-such-dir");
    let both = st.p("wrecked.img");
    std::fs::copy(&img, &both).unwrap();
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&both).unwrap();
        f.write_all_at(&[0xff], 100).unwrap();
        f.write_all_at(&[0xff], 65536 + 100).unwrap();
    }
    let targets: Vec<(String, Vec<String>, PathBuf)> = vec![
        (
            format!("minfs:{}", s(&missing)),
            vec![s(&missing), "No such file or directory".into()],
            missing.clone(),
        ),
        (
            format!("minfs:{}", s(&zeros)),
            vec![
                s(&zeros),
                "not a minfs filesystem".into(),
                "minfs mkfs".into(),
            ],
            zeros.clone(),
        ),
        (
            format!("minfs:{}", s(&wdir)),
            vec![s(&wdir), "is a directory".into()],
            wdir.clone(),
        ),
        (
            format!("minfs:{}", s(&both)),
            vec![s(&both), "no valid metadata slot".into()],
            both.clone(),
        ),
        (
            format!("{m}:a/b"),
            vec!["invalid file name \"a/b\"".into(), "contains '/'".into()],
            img.clone(),
        ),
        (
            format!("file:{}", s(&junk.join("x"))),
            vec!["Not a directory".into()],
            junk.clone(),
        ),
        (
            format!("file-prealloc:{}", s(&junk.join("x"))),
            vec!["Not a directory".into()],
            junk.clone(),
        ),
        (
            format!("file:{}", s(&wdir)),
            vec!["is a directory".into()],
            wdir.clone(),
        ),
        (
            format!("file:{}", s(&junk)),
            vec!["does not hold a Cannyls storage".into()],
            junk.clone(),
        ),
        (
            format!("file-prealloc:{}", s(&junk)),
            vec!["does not hold a Cannyls storage".into()],
            junk.clone(),
        ),
        (
            format!("raw:{}", s(&junk)),
            vec!["not a block device".into()],
            junk.clone(),
        ),
        (
            format!("raw:{}", s(&missing)),
            vec![s(&missing)],
            missing.clone(),
        ),
    ];
    for (spec, needles, target) in &targets {
        let mut needles = needles.clone();
        needles.push(format!("minfs-bench: error: {spec}"));
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        v.push(
            case(format!("backend {spec}"), run(spec, &[]), 1, &needles)
                .watch(target)
                .watch(&img),
        );
    }
    // Options with bad values.
    for (extra, needle) in [
        (vec!["--capacity", "lots"], "'lots'"),
        (vec!["--capacity", "99999999999T"], "too large"),
        (vec!["--block-size", "1024"], "512 or 4096"),
        (vec!["--journal-ratio", "2"], "'2'"),
        (vec!["--scale", "0"], "'0'"),
        (vec!["--scale", "NaN"], "'NaN'"),
        (vec!["--sync-every", "0"], "'0'"),
        (vec!["--seed", "-3"], "'-3'"),
    ] {
        v.push(
            case(
                format!("run {}", extra.join(" ")),
                run(&m, &extra),
                2,
                &[needle],
            )
            .watch(&img),
        );
    }
    v.push(
        case(
            "a capacity larger than the minfs image",
            run(&m, &["--capacity", "1T"]),
            1,
            &[&m, "no space", "cannyls.lusf"],
        )
        .watch(&img),
    );
    let json = nodir.join("report.json");
    v.push(
        case(
            "--json into a missing directory",
            run("memory", &["--json", &s(&json)]),
            1,
            &[
                &format!("cannot create {}", s(&json)),
                "No such file or directory",
            ],
        )
        .watch(&nodir),
    );
    v.push(
        case(
            "--op-log onto a directory",
            run("memory", &["--op-log", &s(&wdir)]),
            1,
            &[
                &format!("cannot create the op-log {}", s(&wdir)),
                "Is a directory",
            ],
        )
        .watch(&wdir),
    );
    v.push(case(
        "run without --backend",
        vec![os("run"), os("--workload"), os(&ok)],
        2,
        &["--backend"],
    ));
    v.push(case(
        "run without --workload",
        vec![os("run"), os("--backend"), os("memory")],
        2,
        &["--workload"],
    ));
    v.push(case(
        "check without a file",
        vec![os("check")],
        2,
        &["<FILE>"],
    ));
    v.push(case(
        "unknown subcommand",
        vec![os("frobnicate")],
        2,
        &["'frobnicate'"],
    ));
    v
}

#[test]
fn bad_input_cases() {
    let st = Setup::new();
    let bin = assert_cmd::cargo::cargo_bin("minfs-bench");
    let runner = testutil::unprivileged_runner(&bin);
    if let Err(why) = &runner {
        testutil::print_skip("bad_input_cases: unreadable workload", why);
    }
    let cases = build_cases(&st);
    let mut n = Counts::default();
    for c in &cases {
        run_case(c, &runner, &mut n);
    }
    for f in &n.failures {
        println!("FAILURE {f}");
    }
    let counts = format!(
        "cases: {}, skipped: {}, wrong exit codes: {}, unclear messages: {}, images changed: {}, panics: {}",
        n.cases, n.skipped, n.wrong_codes, n.unclear, n.changed, n.panics
    );
    testutil::report_counts(env!("CARGO_TARGET_TMPDIR"), "bad_input", &counts);
    assert_eq!(
        (n.wrong_codes, n.unclear, n.changed, n.panics),
        (0, 0, 0, 0),
        "{} failures; first ones above",
        n.failures.len()
    );
    assert!(n.cases >= 100, "only {} cases ran", n.cases);
}

// ---------------------------------------------------------------------------------------------
// Regression for the bug this suite found.

/// Regression: the source line of a parse error was echoed raw, so a binary workload or one
/// holding escape sequences sent control characters to the terminal.
#[test]
fn a_binary_workload_is_not_echoed_raw() {
    let st = Setup::new();
    let esc = b"Command { \x1b[2J\x07 }\n".to_vec();
    let mut binary = esc.clone();
    binary.extend(random_bytes(500, 3));
    for (name, content) in [("esc.wl", &esc), ("binary.wl", &binary)] {
        let wl = st.file(name, content);
        let out = Command::cargo_bin("minfs-bench")
            .unwrap()
            .arg("check")
            .arg(&wl)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let bad: Vec<u8> = out
            .stderr
            .iter()
            .copied()
            .filter(|&b| b < 0x20 && b != b'\n' && b != b'\t' || b == 0x7f)
            .collect();
        assert!(
            bad.is_empty(),
            "{name}: control bytes {bad:?} in {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
