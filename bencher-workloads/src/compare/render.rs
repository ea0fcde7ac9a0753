//! `report.md`: the figures of a [`Comparison`] as Markdown tables.

use std::fmt::Write as _;

use super::format::{self, md};
use super::layout::{Cell, Comparison, DriveWork, Modelled, Profile, Run};
use super::summary::{self, SetupFacts};
use super::verdict::{Judged, Verdicts};
use super::{plot_files, png_name, Source};
use crate::run::report::RunReport;
use crate::run::stats::KindReport;

/// The figures of one workload on one target over its runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetFigures {
    /// Runs counted (that succeeded, or that were modelled).
    pub ok: usize,
    /// Median, min and max of `total_elapsed_ns`.
    pub total: Option<(f64, u64, u64)>,
    /// Median of `wall_ns`.
    pub wall: Option<f64>,
    /// Median of `bw_bytes_per_sec`.
    pub bw: Option<f64>,
}

/// The figures of `reports`.
pub fn figures(reports: &[&RunReport]) -> TargetFigures {
    let totals: Vec<u64> = reports.iter().map(|r| r.total_elapsed_ns).collect();
    let walls: Vec<u64> = reports.iter().map(|r| r.wall_ns).collect();
    let bws: Vec<f64> = reports.iter().map(|r| r.bw_bytes_per_sec).collect();
    TargetFigures {
        ok: reports.len(),
        total: format::median_u64(&totals).map(|m| {
            (
                m,
                totals.iter().copied().min().unwrap_or(0),
                totals.iter().copied().max().unwrap_or(0),
            )
        }),
        wall: format::median_u64(&walls),
        bw: format::median(&bws),
    }
}

/// The order kinds are shown in: Put, Embed, Get by size, Delete, DeleteRange, Sync, others
/// by name, `overall` last.
fn kind_key(kind: &str) -> (u8, u64, String) {
    let sized = |prefix: &str| {
        kind.strip_prefix(prefix)
            .and_then(|s| s.strip_prefix('('))
            .and_then(|s| s.strip_suffix(')'))
            .and_then(|s| s.parse::<u64>().ok())
    };
    let (class, size) = if let Some(n) = sized("Put") {
        (0, n)
    } else if let Some(n) = sized("Embed") {
        (1, n)
    } else if let Some(n) = sized("Get") {
        (2, n)
    } else {
        match kind {
            "Delete" => (3, 0),
            "DeleteRange" => (4, 0),
            "Sync" => (5, 0),
            "overall" => (7, 0),
            _ => (6, 0),
        }
    };
    (class, size, kind.to_string())
}

/// The per-kind table: for each kind and target, the medians over runs of the count, the
/// percentiles and the max.
fn kind_table(out: &mut String, targets: &[String], reports: &[Vec<&RunReport>]) {
    let mut kinds: Vec<(u8, u64, String)> = Vec::new();
    for rs in reports {
        for r in rs {
            for k in r.kinds.iter().chain(std::iter::once(&r.overall)) {
                let key = kind_key(&k.kind);
                if !kinds.contains(&key) {
                    kinds.push(key);
                }
            }
        }
    }
    kinds.sort();
    if kinds.is_empty() {
        out.push_str("No per-kind figures (no run succeeded).\n\n");
        return;
    }
    out.push_str(
        "| Kind | Target | count | p50 | p90 | p95 | p99 | p99.9 | max |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (_, _, kind) in &kinds {
        for (t, rs) in targets.iter().zip(reports) {
            let of: Vec<&KindReport> = rs
                .iter()
                .filter_map(|r| {
                    if *kind == r.overall.kind {
                        Some(&r.overall)
                    } else {
                        r.kinds.iter().find(|k| k.kind == *kind)
                    }
                })
                .collect();
            if of.is_empty() {
                continue;
            }
            let med = |f: &dyn Fn(&KindReport) -> u64| {
                format::median_u64(&of.iter().map(|k| f(k)).collect::<Vec<_>>()).expect("not empty")
            };
            let _ = write!(
                out,
                "| {} | {} | {} ",
                md(kind),
                md(t),
                format::count(med(&|k| k.count))
            );
            for i in 0..5 {
                let _ = write!(
                    out,
                    "| {} ",
                    format::time(med(&|k| k.percentiles_ns.values()[i]))
                );
            }
            let _ = writeln!(out, "| {} |", format::time(med(&|k| k.max_ns)));
        }
    }
    out.push('\n');
}

/// `runs/<w>/<t>/<file>` as a Markdown link.
fn run_link(w: &str, t: &str, file: &str) -> String {
    format!(
        "[{}]({})",
        md(file),
        format::link_path(&["runs", w, t, file])
    )
}

/// The runs count of a cell whose runs `ok` succeeded: `3/4` in a fixed-count run (every
/// target was to run every round), `3` in a budget run (a comparison stops once decided, so
/// the rounds it never needed are no failure).
fn runs_count(cmp: &Comparison, ok: usize) -> String {
    if cmp.meta.sequential() {
        ok.to_string()
    } else {
        format!("{ok}/{}", cmp.runs)
    }
}

/// The "runs ok" cell of the measured table: the count ([`runs_count`]) and the runs that
/// failed (and, in a fixed-count run, those missing).
fn runs_cell(cmp: &Comparison, w: &str, t: &str, cell: &Cell) -> String {
    let mut s = runs_count(cmp, cell.ok().len());
    let mut notes = Vec::new();
    for (i, run) in cell.runs.iter().enumerate() {
        let k = i + 1;
        match run {
            Run::Ok(_) => {}
            Run::Failed(_) => notes.push(format!(
                "run {k} failed (see {})",
                run_link(w, t, &format!("run-{k}.error"))
            )),
            Run::Missing if !cmp.meta.sequential() => notes.push(format!("run {k}: —")),
            Run::Missing => {}
        }
    }
    if !notes.is_empty() {
        let _ = write!(s, ": {}", notes.join("; "));
    }
    s
}

/// A cell's total elapsed per round (run k at index k − 1): the runs that succeeded, or the
/// modelled runs of a profile.
pub fn round_totals(cell: &Cell, source: Source<'_>) -> Vec<Option<f64>> {
    match source {
        Source::Measured => cell
            .runs
            .iter()
            .map(|r| match r {
                Run::Ok(r) => Some(r.total_elapsed_ns as f64),
                _ => None,
            })
            .collect(),
        Source::Modelled(p) => cell
            .models
            .get(p)
            .map(|v| {
                v.iter()
                    .map(|m| m.as_ref().map(|m| m.report.total_elapsed_ns as f64))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The drive-model profiles that are rule sets of one drive: the shipped one and all of them
/// (it first). `compare.json`'s `variants` where it names profiles the directory has; else
/// every profile but a `-4kn` one, `st1000dm003` first where present. `None` without
/// modelled runs.
pub fn model_variants(cmp: &Comparison) -> Option<(&Profile, Vec<&Profile>)> {
    let by_id = |id: &str| cmp.profiles.iter().find(|p| p.id == id);
    let listed: Vec<&Profile> = cmp
        .meta
        .variants
        .iter()
        .flatten()
        .filter_map(|id| by_id(id))
        .collect();
    let mut all = if listed.is_empty() {
        cmp.profiles
            .iter()
            .filter(|p| !p.id.ends_with("-4kn"))
            .collect()
    } else {
        listed
    };
    if cmp.meta.variants.is_none() {
        if let Some(i) = all.iter().position(|p| p.id == "st1000dm003") {
            let p = all.remove(i);
            all.insert(0, p);
        }
    }
    let shipped = *all.first()?;
    Some((shipped, all))
}

/// A profile's title: its name, and for a profile with overrides (`st1000dm003+PARAM=VALUE`,
/// whose name is its base's) the overrides too.
pub fn profile_title(p: &Profile) -> String {
    match p.id.split_once('+') {
        Some((_, overrides)) => format!("{}, with {}", p.name, overrides),
        None => p.name.clone(),
    }
}

/// The device in a few words: `the loop device`, `the emulated drive (st1000dm003)`, or as
/// compare.json names it.
pub(super) fn device_words(cmp: &Comparison) -> String {
    let device = cmp.meta.device.as_deref().unwrap_or("");
    if let Some(profile) = super::layout::emulated_profile(device) {
        format!(
            "the emulated drive (`hddsim emulate --profile {}`)",
            md(profile)
        )
    } else if device.contains("loop device") {
        "the loop device".to_string()
    } else if device.is_empty() {
        "the device the runs used".to_string()
    } else {
        md(device)
    }
}

/// The kind of device compare.json names, for the text that depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DeviceKind {
    /// A loop device over `hddsim emulate`'s drive.
    Emulated,
    /// A loop device over an image file.
    Loop,
    /// A real disk, or a device not recorded.
    Other,
}

/// The kind of device the runs of `cmp` used.
pub(super) fn device_kind(cmp: &Comparison) -> DeviceKind {
    let device = cmp.meta.device.as_deref().unwrap_or("");
    if device.contains("hddsim emulate") {
        DeviceKind::Emulated
    } else if device.contains("loop device") {
        DeviceKind::Loop
    } else {
        DeviceKind::Other
    }
}

/// What the measured verdict measures and what it does not, in two sentences.
pub(super) fn measured_scope(cmp: &Comparison) -> String {
    match device_kind(cmp) {
        DeviceKind::Emulated => {
            "It measures the host's real behaviour (Cannyls, the filesystem, the page cache, the \
         kernel's block layer) against the drive model in real time: every reply waits for the \
         modelled completion. It is only as right as the model (docs/HDD-MODEL.md) and its rule \
         set, and it adds the emulator's own time per request (`emulation-check.md`)."
                .to_string()
        }
        DeviceKind::Loop => "It measures Cannyls' and the kernel's CPU and I/O paths on a loop \
                             device over an image file on this machine: what the targets cost \
                             in software. It does not measure a spinning drive — no seeks, no \
                             rotation, no 512e read-modify-write; a flush is an `fsync` of the \
                             image on the host."
            .to_string(),
        DeviceKind::Other => "It measures the runs on that device.".to_string(),
    }
}

/// Per target, the Cannyls block size its runs used (from the run reports), `minfs 4096,
/// ext4 512, …`; `None` when no run says.
pub(super) fn block_sizes(cmp: &Comparison) -> Option<String> {
    let parts: Vec<String> = cmp
        .targets
        .iter()
        .enumerate()
        .filter_map(|(t, name)| {
            let sizes: Vec<u32> = cmp
                .cells
                .iter()
                .flat_map(|row| row[t].ok())
                .map(|r| r.info.block_size)
                .collect();
            let first = *sizes.first()?;
            Some(if sizes.iter().all(|&s| s == first) {
                format!("{} {first}", md(name))
            } else {
                format!("{} mixed", md(name))
            })
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Puts in a run report: the count of its `Put(…)` kinds.
fn puts(r: &RunReport) -> u64 {
    r.kinds
        .iter()
        .filter(|k| k.kind.starts_with("Put("))
        .map(|k| k.count)
        .sum()
}

/// Syncs in a run report: the count of its `Sync` kind.
fn syncs(r: &RunReport) -> u64 {
    r.kinds
        .iter()
        .filter(|k| k.kind == "Sync")
        .map(|k| k.count)
        .sum()
}

/// The median over `runs` of `figure` (`None` for a run without it); `n/a` when no run has
/// it, `—` when the figure is there but has no denominator (no puts, no syncs, no partial
/// writes).
fn median_of(
    runs: &[&Modelled],
    decimals: usize,
    figure: impl Fn(&Modelled) -> Option<Option<f64>>,
) -> String {
    let got: Vec<Option<f64>> = runs.iter().filter_map(|m| figure(m)).collect();
    if got.is_empty() {
        return "n/a".to_string();
    }
    let values: Vec<f64> = got.into_iter().flatten().collect();
    format::median(&values).map_or_else(|| "—".to_string(), |x| format!("{x:.decimals$}"))
}

/// `n / d`, `None` when `d` is 0.
fn per(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// "What needs no model": per workload and target, from the block traces of the modelled
/// runs of `profile` (the counts are the trace's, the same under every profile; median over
/// the runs): the writes that cover a 4 KiB physical sector only in part, per put and per
/// sync, and the share of them issued in syncs (Cannyls' journal) and in puts (the data),
/// next to the writes that re-open a 4 KiB sector per put. `n/a` where a run's report has no
/// such count (written before it was counted). Empty when no trace count is there.
pub(super) fn reopen_table(cmp: &Comparison, profile: &str) -> String {
    let mut rows = Vec::new();
    for (w, name) in cmp.workloads.iter().enumerate() {
        let mut lines = Vec::new();
        let mut counted = false;
        for (t, target) in cmp.targets.iter().enumerate() {
            let runs = cmp.cells[w][t].modelled(profile);
            if runs.is_empty() {
                continue;
            }
            counted |= runs.iter().any(|m| {
                m.model.work.reopen_writes.is_some() || m.model.work.partial_sector_writes.is_some()
            });
            let mut sizes: Vec<u32> = runs.iter().map(|m| m.report.info.block_size).collect();
            sizes.sort_unstable();
            sizes.dedup();
            let block = match sizes[..] {
                [b] if b > 0 => b.to_string(),
                [_] => "—".to_string(),
                _ => "mixed".to_string(),
            };
            let partial = |m: &Modelled| m.model.work.partial_sector_writes;
            let share = |m: &Modelled, part: Option<u64>| Some(per(100 * part?, partial(m)?));
            let cells = [
                median_of(&runs, 2, |m| {
                    Some(per(m.model.work.reopen_writes?, puts(&m.report)))
                }),
                median_of(&runs, 2, |m| Some(per(partial(m)?, puts(&m.report)))),
                median_of(&runs, 2, |m| Some(per(partial(m)?, syncs(&m.report)))),
                median_of(&runs, 0, |m| {
                    share(m, m.model.work.partial_sector_writes_in_syncs)
                }),
                median_of(&runs, 0, |m| {
                    share(m, m.model.work.partial_sector_writes_in_puts)
                }),
            ];
            lines.push(format!(
                "| {} | {} | {block} | {} | {} |",
                md(name),
                md(target),
                runs_count(cmp, runs.len()),
                cells.join(" | ")
            ));
        }
        if counted {
            rows.extend(lines);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Partial-sector and re-opening writes, counted from the block traces alone (median over \
         the runs, per put and per sync of the run): a write that does not start or does not end on a 4096-byte boundary covers a physical sector of a 512e \
         drive only in part, so the drive must read the rest back or merge it in its cache \
         before it writes the sector (**partial-sector writes**: Cannyls' journal writes at \
         block size 512 as well as puts landing in a block a filesystem zero-padded); **in \
         syncs** / **in puts**: the share of them issued while a sync ran (Cannyls writes its \
         journal at a sync) or while a put ran (the put's data). **Re-opening writes** are the \
         puts that start inside the 4 KiB sector just below the previous write's \
         4 KiB-aligned end (the zeros a filesystem padded the last put with): a physical \
         sector written twice or read back. n/a: the run's report predates the count.\n\n\
         | Workload | Target | Block size | Runs | Re-opening writes per put | Partial-sector \
         writes per put | per sync | in syncs (%) | in puts (%) |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    out.push('\n');
    out
}

/// What the measured tables are, what the modelled ones are, and why they may disagree,
/// from the device compare.sh described.
fn measured_vs_modelled(cmp: &Comparison) -> String {
    let device = cmp.meta.device.as_deref().unwrap_or("");
    let kind = device_kind(cmp);
    let measured = if kind == DeviceKind::Emulated {
        "The **measured** tables are timed on the device above: a loop device over an emulated \
         drive (`hddsim emulate`), so their times are the drive model's, met in real time \
         (FUSE's and the loop device's own time per request added)."
            .to_string()
    } else if kind == DeviceKind::Loop {
        "The **measured** tables are timed on the device above: a loop device over an image \
         file on this machine's disk. That is not a drive: there a write lands in the host's \
         file (and page cache or the hypervisor's disk), and a flush is an `fsync` of the \
         image file on the host, which a virtual disk may complete without any platter \
         turning; there are no seeks or rotations to pay."
            .to_string()
    } else if device.is_empty() {
        "The **measured** tables are timed on the device the runs used.".to_string()
    } else {
        format!(
            "The **measured** tables are timed on the device above ({}).",
            md(device)
        )
    };
    let modelled = if cmp.profiles.is_empty() {
        " No tables are modelled here (no block traces were replayed).".to_string()
    } else {
        let names: Vec<String> = cmp
            .profiles
            .iter()
            .map(|p| format!("\"Modelled on {}\"", md(&profile_title(p))))
            .collect();
        format!(
            " The **modelled** tables ({}) are not timed at all: each run's block requests \
             (its trace) are replayed through the drive model of `docs/HDD-MODEL.md`, which \
             charges a spinning drive's seeks, rotations, cache destaging and 512e \
             read-modify-writes. {}",
            names.join(", "),
            if kind == DeviceKind::Emulated {
                "Here both come from the same model, so they should agree but for the \
                 emulator's own time per request (`emulation-check.md` compares them run by \
                 run)."
            } else {
                "The two may disagree: a flush that costs a host `fsync` on the measured \
                 device waits, on the modelled drive, until its cache has reached the \
                 platters, and scattered writes that cost little there pay seeks and \
                 rotations on the model. Each ratio holds for the device it was taken on."
            }
        )
    };
    measured + &modelled
}

fn baseline_words(cmp: &Comparison) -> (String, bool) {
    match cmp.baseline() {
        Some(b) => (cmp.targets[b].clone(), cmp.targets[b] == "minfs"),
        None => ("minfs".to_string(), true),
    }
}

/// `## How the runs were made`: the scale, the rounds, the block sizes, the seed and the
/// device in one sentence, and the link to SETUP.md.
fn setup_paragraph(out: &mut String, cmp: &Comparison) {
    let m = &cmp.meta;
    out.push_str("## How the runs were made\n\n");
    let mut facts = Vec::new();
    if let Some(s) = m.scale {
        facts.push(format!("scale {s}"));
    }
    facts.push(if m.sequential() {
        // A budget run: each comparison stopped once decided, so the count is a maximum.
        format!(
            "up to {} round{} per workload and target (each comparison stopped once decided, \
             within a {} budget)",
            cmp.runs,
            if cmp.runs == 1 { "" } else { "s" },
            m.budget_s
                .map(|b| format::time(b * 1e9))
                .unwrap_or_else(|| "time".into())
        )
    } else {
        format!(
            "{} run{} per workload and target",
            cmp.runs,
            if cmp.runs == 1 { "" } else { "s" }
        )
    });
    match m.block_size {
        Some(b) => facts.push(format!("block size {b} bytes")),
        // compare.sh without --block-size: minfs at MinfsNvm's 4096, the others at 512.
        None if m.targets.is_some() => facts.push(
            if cmp.targets.iter().any(|t| t.contains('@')) {
                "each target's default block size (minfs 4096, the others 512; TARGET@N at N)"
            } else {
                "each target's default block size (minfs 4096, the others 512)"
            }
            .into(),
        ),
        None => {}
    }
    facts.push(match m.seed {
        Some(s) => format!("seed {s}"),
        None => "each workload's own seed".to_string(),
    });
    match (&m.device, m.sector_size) {
        (Some(d), Some(s)) => facts.push(format!("device {} ({s}-byte sectors)", md(d))),
        (Some(d), None) => facts.push(format!("device {}", md(d))),
        (None, Some(s)) => facts.push(format!("{s}-byte sectors")),
        (None, None) => {}
    }
    let mut first = facts.join(", ");
    if let Some(c) = first.get(..1) {
        first = c.to_uppercase() + &first[1..];
    }
    let _ = writeln!(out, "{first}.");
    if cmp.has_setup {
        out.push_str("How the runs were made: [SETUP.md](SETUP.md).\n\n");
    } else {
        out.push_str("(No SETUP.md in this directory.)\n\n");
    }
}

/// What the figures of the tables are.
fn definitions(out: &mut String, cmp: &Comparison) {
    let (base, is_minfs) = baseline_words(cmp);
    let base = md(&base);
    out.push_str("## How to read the tables\n\n");
    let _ = write!(
        out,
        "**Total elapsed** is the sum of the operation times of a run (`total_elapsed_ns` of its \
         JSON report); the figure shown is the median over the runs that succeeded (the mean of \
         the two middle ones for an even count), with the min–max over those runs. **Ratio** is \
         the comparison's estimate of a target's total elapsed / {base}'s over the rounds it was \
         judged on (the figure of the table at the top and of the verdicts), so {base} = 1 and \
         above 1 means slower than {base}."
    );
    if !is_minfs {
        let _ = write!(
            out,
            " There is no `minfs` target, so the first target, {base}, is the baseline."
        );
    }
    out.push_str(
        " **MB/s** = payload bytes put and read / total elapsed (median over runs, MB = 10^6 \
         bytes). **Wall** = the wall time of the run (median). Per kind, each figure is the \
         median over runs of that run's value (percentiles from an HDR histogram with 3 \
         significant digits). Times are shown with 3 significant digits.\n\n",
    );
    out.push_str(&measured_vs_modelled(cmp));
    out.push_str("\n\n");
}

/// The ratio column of a workload's table: 1 for the baseline, else the comparison's estimate
/// ([`super::verdict`]; the same figure as everywhere in the report), `—` without one.
fn estimate_cell(
    verdicts: &Verdicts,
    w: usize,
    t: usize,
    base: Option<usize>,
    any: bool,
) -> String {
    if Some(t) == base {
        return if any {
            "1".to_string()
        } else {
            "—".to_string()
        };
    }
    format::ratio(
        verdicts.cells[w][t]
            .as_ref()
            .map(|v| v.estimate)
            .filter(|e| e.is_finite()),
    )
}

fn measured_workload(
    out: &mut String,
    cmp: &Comparison,
    verdicts: &Verdicts,
    w: usize,
    cdf: Option<&str>,
) {
    let name = &cmp.workloads[w];
    let _ = writeln!(out, "## {}\n", md(name));
    out.push_str(
        "| Target | total elapsed, median (min–max) | ratio | MB/s | wall, median | runs ok |\n\
         | --- | ---: | ---: | ---: | ---: | --- |\n",
    );
    let base = cmp.baseline();
    let mut failures = Vec::new();
    for (t, target) in cmp.targets.iter().enumerate() {
        let cell = &cmp.cells[w][t];
        let f = figures(&cell.ok());
        let total = match f.total {
            Some((m, lo, hi)) => format!(
                "{} ({}–{})",
                format::time(m),
                format::time(lo as f64),
                format::time(hi as f64)
            ),
            None => "—".to_string(),
        };
        let ratio = estimate_cell(verdicts, w, t, base, f.total.is_some());
        let _ = writeln!(
            out,
            "| {} | {total} | {ratio} | {} | {} | {} |",
            md(target),
            format::mb_per_sec(f.bw),
            format::opt_time(f.wall),
            runs_cell(cmp, name, target, cell)
        );
        for (i, run) in cell.runs.iter().enumerate() {
            if let Run::Failed(reason) = run {
                failures.push(format!(
                    "- {} run {}: {} ({})",
                    md(target),
                    i + 1,
                    md(reason),
                    run_link(name, target, &format!("run-{}.error", i + 1))
                ));
            }
        }
    }
    out.push('\n');
    if !failures.is_empty() {
        out.push_str("Failed runs:\n\n");
        for f in failures {
            let _ = writeln!(out, "{f}");
        }
        out.push('\n');
    }
    out.push_str("Latency per kind of operation (median over runs):\n\n");
    let reports: Vec<Vec<&RunReport>> = cmp.cells[w].iter().map(Cell::ok).collect();
    kind_table(out, &cmp.targets, &reports);
    match cdf {
        Some(file) => {
            let logs: usize = cmp.cells[w].iter().map(|c| c.oplogs).sum();
            let _ = writeln!(
                out,
                "Latency CDF of all operations (end − start from the op-logs of the runs that \
                 succeeded, pooled: {logs} op-log{}): [{file}]({file})\n\n![latency CDF of {}]({file})\n",
                if logs == 1 { "" } else { "s" },
                md(name)
            );
        }
        None => out.push_str("No op-logs of runs that succeeded, so no latency CDF.\n\n"),
    }
}

/// Of `runs`, the one whose modelled total is the median (the lower of the two middle ones
/// for an even count; ties keep the earlier run).
pub(super) fn median_run<'a>(runs: &[&'a Modelled]) -> Option<&'a Modelled> {
    let mut v = runs.to_vec();
    v.sort_by_key(|m| m.report.total_elapsed_ns);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// A count with thousands separators (`12,345`), or `—`.
pub(super) fn opt_count(c: Option<u64>) -> String {
    c.map_or_else(|| "—".to_string(), format::thousands)
}

/// Bytes as MB (10^6) with one decimal, or `—`.
pub(super) fn opt_mb(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "—".to_string(), |b| format!("{:.1}", b as f64 / 1e6))
}

/// The sum of two optional figures (`None` only when both are missing).
fn sum2(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// Flushes, pre-flushed writes and FUA writes together (`None` when the run has none of the
/// three figures).
pub(super) fn flush_total(d: &DriveWork) -> Option<u64> {
    match (d.flushes, d.preflush_writes, d.fua_writes) {
        (None, None, None) => None,
        (f, p, u) => Some(f.unwrap_or(0) + p.unwrap_or(0) + u.unwrap_or(0)),
    }
}

/// One row of [`drive_work_table`]: the cells after the target's name.
fn drive_work_cells(d: &DriveWork) -> Vec<String> {
    let flushes = flush_total(d);
    let rmw = match (d.rmw_penalties, d.rmw_ns) {
        (Some(n), t) => format!("{} ({})", opt_count(Some(n)), format::opt_time(t)),
        (None, _) => "—".to_string(),
    };
    vec![
        opt_count(d.writes),
        opt_mb(d.write_bytes),
        opt_count(d.reads),
        opt_mb(d.read_bytes),
        opt_count(flushes),
        opt_count(d.requests_outside_ops),
        format::opt_time(d.media_busy_ns),
        format::opt_time(sum2(d.read_seek_ns, d.destage_seek_ns)),
        format::opt_time(sum2(d.read_rotation_ns, d.destage_rotation_ns)),
        rmw,
        format::opt_time(d.flush_wait_ns),
        format::opt_time(d.read_destage_wait_ns),
    ]
}

/// Per target, what its median modelled run sent to the drive and where the modelled drive's
/// time went: the figures that explain a modelled ratio.
fn drive_work_table(out: &mut String, cmp: &Comparison, w: usize, profile: &str) {
    let rows: Vec<(String, Vec<String>)> = cmp
        .targets
        .iter()
        .enumerate()
        .filter_map(|(t, target)| {
            let run = median_run(&cmp.cells[w][t].modelled(profile))?;
            Some((md(target), drive_work_cells(&run.model.work)))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "\nWhat each target's run with the median modelled total sent to the drive, and where \
         the modelled drive's time went. **Flushes** counts empty flushes, preflush and FUA \
         writes; **outside ops** the requests issued while no operation ran (making the \
         storage, background writeback); **media busy** the time the media worked for reads \
         and destaging the cache, of which **seek**, **rotation** and the 512e \
         **read-modify-writes** (an extra revolution each) are parts; **flush wait** the time \
         flushes waited for the cache to be written; **read wait** the time media reads waited \
         behind the destage. Waits overlap the media's work, so the columns do not add up to \
         the total.\n\n\
         | Target | writes | MB written | reads | MB read | flushes | outside ops | media busy \
         | seek | rotation | read-modify-writes | flush wait | read wait |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (target, cells) in rows {
        let _ = writeln!(out, "| {target} | {} |", cells.join(" | "));
    }
}

/// A count and a time, `3 (1.20 s)`, or `—`.
fn count_time(n: Option<u64>, t: Option<f64>) -> String {
    match n {
        Some(n) => format!("{} ({})", format::thousands(n), format::opt_time(t)),
        None => "—".to_string(),
    }
}

/// Per target, the writes that re-open a 4 KiB sector as counted from the trace, next to
/// what the modelled drive made of them (its median modelled run).
fn write_hits_table(out: &mut String, cmp: &Comparison, w: usize, profile: &str) {
    let rows: Vec<(String, &DriveWork)> = cmp
        .targets
        .iter()
        .enumerate()
        .filter_map(|(t, target)| {
            let run = median_run(&cmp.cells[w][t].modelled(profile))?;
            Some((md(target), &run.model.work))
        })
        .collect();
    if !rows.iter().any(|(_, d)| d.reopen_writes.is_some()) {
        return;
    }
    out.push_str(
        "\nWrites into data the drive already holds. **Re-opening writes** are counted from \
         the trace alone: writes starting inside the 4 KiB sector just below the previous \
         write's 4 KiB-aligned end (ext4's and XFS's zero-padded block tails), and how many \
         of them came after a read. The rest is what the modelled drive made of them \
         (docs/HDD-MODEL.md, \"Write hits\"): physical sectors it held whole that a write \
         covered in part (**re-opened**, clean / dirty), writes that waited for the dirty \
         data they overlap (**write-first waits**), write pieces that waited for room in \
         their segment, and the 512e read-modify-writes by what forced them (flush / \
         pressure / write-first) and how many were of a re-opened sector whose rest the \
         write had cleared.\n\n\
         | Target | writes | re-opening writes | after a read | re-opened clean / dirty \
         | write-first waits | segment waits | read-modify-writes: flush / pressure / \
         write-first | of re-opened sectors |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (target, d) in rows {
        let pair = match (d.reopened_clean, d.reopened_dirty) {
            (None, None) => "—".to_string(),
            (c, r) => format!("{} / {}", opt_count(c), opt_count(r)),
        };
        let causes = match (d.rmw_for_flush, d.rmw_for_pressure, d.rmw_for_write_first) {
            (None, None, None) => "—".to_string(),
            (f, p, wf) => format!("{} / {} / {}", opt_count(f), opt_count(p), opt_count(wf)),
        };
        let _ = writeln!(
            out,
            "| {target} | {} | {} | {} | {pair} | {} | {} | {causes} | {} |",
            opt_count(d.writes),
            opt_count(d.reopen_writes),
            opt_count(d.reopen_writes_after_read),
            count_time(d.write_first_waits, d.write_first_wait_ns),
            count_time(d.segment_full_waits, d.segment_full_wait_ns),
            opt_count(d.rmw_of_reopened_clean),
        );
    }
}

fn modelled_section(
    out: &mut String,
    cmp: &Comparison,
    judged: &Judged,
    p: &Profile,
    plot: Option<&str>,
) {
    let (base, _) = baseline_words(cmp);
    let Some(verdicts) = judged.modelled.get(&p.id) else {
        return;
    };
    let _ = writeln!(out, "# Modelled on {}\n", md(&profile_title(p)));
    let _ = writeln!(
        out,
        "Modelled HDD times (profile `{}`): the block requests each run issued, replayed \
         through the drive model of `docs/HDD-MODEL.md` (`run-<k>.model-{}.json`). The tables \
         read as above, with modelled times; ratios are to {}'s modelled total. The \
         **sequential limit** is the time the modelled drive needs to transfer the run's bytes \
         in one sequential stream (median over runs); **total / limit** = median modelled \
         total / that limit.\n",
        md(&p.id),
        md(&p.id),
        md(&base)
    );
    out.push_str("## Summary: ratio of modelled total elapsed\n\n");
    out.push_str(&summary::table(cmp, verdicts));
    let _ = writeln!(
        out,
        "\n{} Judged as the measured runs are, on the replays' totals, the states the \
         replays'.\n",
        summary::legend(&md(&base), verdicts)
    );
    if let Some(plot) = plot {
        let _ = writeln!(
            out,
            "The modelled ratios of the shipped rule set, with the range across the rule \
             sets: [{plot}]({plot})\n"
        );
    }
    let base_idx = cmp.baseline();
    for (w, name) in cmp.workloads.iter().enumerate() {
        let _ = writeln!(out, "## {} (modelled)\n", md(name));
        out.push_str(
            "| Target | modelled total, median (min–max) | ratio | MB/s | sequential limit | \
             total / limit | runs modelled |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
        );
        let mut reports = Vec::new();
        for (t, target) in cmp.targets.iter().enumerate() {
            let cell = &cmp.cells[w][t];
            let modelled = cell.modelled(&p.id);
            let rs: Vec<&RunReport> = modelled.iter().map(|m| &m.report).collect();
            let f = figures(&rs);
            let limits: Vec<u64> = modelled
                .iter()
                .filter_map(|m| m.model.sequential_limit_ns)
                .collect();
            let limit = format::median_u64(&limits);
            let total = match f.total {
                Some((m, lo, hi)) => format!(
                    "{} ({}–{})",
                    format::time(m),
                    format::time(lo as f64),
                    format::time(hi as f64)
                ),
                None => "—".to_string(),
            };
            let ratio = estimate_cell(verdicts, w, t, base_idx, f.total.is_some());
            let over = match (f.total, limit) {
                (Some((m, _, _)), Some(l)) if l > 0.0 => Some(m / l),
                _ => None,
            };
            let _ = writeln!(
                out,
                "| {} | {total} | {ratio} | {} | {} | {} | {} |",
                md(target),
                format::mb_per_sec(f.bw),
                format::opt_time(limit),
                format::ratio(over),
                runs_count(cmp, rs.len())
            );
            reports.push(rs);
        }
        drive_work_table(out, cmp, w, &p.id);
        write_hits_table(out, cmp, w, &p.id);
        out.push_str("\nModelled latency per kind of operation (median over runs):\n\n");
        kind_table(out, &cmp.targets, &reports);
    }
}

/// The whole `report.md`: the first screen, the verdicts, the drive's states, the method, the
/// modelled verdict and the block-size split ([`summary`], from the one judgement `judged`),
/// then how the runs were made and the tables per workload, measured and modelled.
pub fn markdown(cmp: &Comparison, judged: &Judged, facts: &SetupFacts) -> String {
    let files = plot_files(cmp);
    let mut out = summary::first_screen(cmp, judged, facts);
    out.push_str(&summary::verdicts_section(cmp, judged));
    out.push_str(&summary::states_section(cmp, judged));
    out.push_str(&summary::method_section(cmp, judged));
    out.push_str(&summary::modelled_summary(cmp, judged));
    out.push_str(&super::split::section(cmp, judged));
    setup_paragraph(&mut out, cmp);
    definitions(&mut out, cmp);
    if !cmp.targets.is_empty() && !cmp.workloads.is_empty() {
        let _ = writeln!(
            out,
            "Ratios by workload, with their intervals: [{0}]({0}) (and [PNG]({1}))\n",
            files.ratios,
            png_name(&files.ratios)
        );
    }
    for w in 0..cmp.workloads.len() {
        measured_workload(&mut out, cmp, &judged.measured, w, files.cdf[w].as_deref());
    }
    for p in &cmp.profiles {
        modelled_section(&mut out, cmp, judged, p, files.modelled.as_deref());
    }
    // One trailing newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_sort_like_the_run_report() {
        let mut k: Vec<_> = [
            "overall",
            "Sync",
            "Get(4096)",
            "Put(1048576)",
            "Put(4096)",
            "Embed(512)",
            "DeleteRange",
            "Delete",
            "Weird",
        ]
        .iter()
        .map(|s| kind_key(s))
        .collect();
        k.sort();
        let names: Vec<&str> = k.iter().map(|k| k.2.as_str()).collect();
        assert_eq!(
            names,
            [
                "Put(4096)",
                "Put(1048576)",
                "Embed(512)",
                "Get(4096)",
                "Delete",
                "DeleteRange",
                "Sync",
                "Weird",
                "overall"
            ]
        );
    }
}
