//! `report.md`: the figures of a [`Comparison`] as Markdown tables.

use std::fmt::Write as _;

use super::format::{self, md};
use super::layout::{Cell, Comparison, DriveWork, Modelled, Profile, Run};
use super::{plot_files, Source};
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

/// Per workload and target, the median total elapsed / the baseline's (`None` where either
/// has no runs, or the baseline's is 0).
pub fn ratio_matrix(cmp: &Comparison, source: Source<'_>) -> Vec<Vec<Option<f64>>> {
    let Some(base) = cmp.baseline() else {
        return vec![Vec::new(); cmp.workloads.len()];
    };
    cmp.cells
        .iter()
        .map(|row| {
            let median = |c: &Cell| figures(&source.reports(c)).total.map(|t| t.0);
            let b = median(&row[base]).filter(|&b| b > 0.0);
            row.iter().map(|c| Some(median(c)? / b?)).collect()
        })
        .collect()
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

/// The "runs ok" cell of the measured table.
fn runs_cell(cmp: &Comparison, w: &str, t: &str, cell: &Cell) -> String {
    let ok = cell.ok().len();
    let mut s = format!("{ok}/{}", cmp.runs);
    let mut notes = Vec::new();
    for (i, run) in cell.runs.iter().enumerate() {
        let k = i + 1;
        match run {
            Run::Ok(_) => {}
            Run::Failed(_) => notes.push(format!(
                "run {k} failed (see {})",
                run_link(w, t, &format!("run-{k}.error"))
            )),
            Run::Missing => notes.push(format!("run {k}: —")),
        }
    }
    if !notes.is_empty() {
        let _ = write!(s, ": {}", notes.join("; "));
    }
    s
}

/// The summary table of ratios.
/// How a target's total elapsed stands against the baseline's over the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Every run of the target took longer than every run of the baseline (its fastest run
    /// is slower than the baseline's slowest): slower beyond the run-to-run spread.
    Slower,
    /// Every run of the target took less time than every run of the baseline.
    Faster,
    /// The two ranges (min–max over the runs) overlap: the difference is within the spread.
    WithinSpread,
    /// Fewer than 2 runs of the one or the other were counted, so there is no spread to judge
    /// by (or a figure is missing).
    NotJudged,
}

impl Standing {
    /// The mark the summary tables put after a ratio: ▲ slower, ▼ faster, ~ within the
    /// spread, nothing when not judged.
    pub fn mark(self) -> &'static str {
        match self {
            Standing::Slower => " ▲",
            Standing::Faster => " ▼",
            Standing::WithinSpread => " ~",
            Standing::NotJudged => "",
        }
    }
}

/// How `target`'s runs stand against `base`'s (see [`Standing`]).
pub fn standing(target: &[&RunReport], base: &[&RunReport]) -> Standing {
    if target.len() < 2 || base.len() < 2 {
        return Standing::NotJudged;
    }
    let (Some((_, t_min, t_max)), Some((_, b_min, b_max))) =
        (figures(target).total, figures(base).total)
    else {
        return Standing::NotJudged;
    };
    if t_min > b_max {
        Standing::Slower
    } else if t_max < b_min {
        Standing::Faster
    } else {
        Standing::WithinSpread
    }
}

/// The verdict on workload `w`: one sentence naming the targets slower or faster than the
/// baseline beyond the run-to-run spread (with their median ratio), those within it, and
/// those not judged.
pub fn verdict_sentence(cmp: &Comparison, w: usize, source: Source<'_>) -> String {
    let name = md(&cmp.workloads[w]);
    let Some(b) = cmp.baseline() else {
        return format!("**{name}**: no targets.");
    };
    let base = md(&cmp.targets[b]);
    let ratios = ratio_matrix(cmp, source);
    let base_runs = source.reports(&cmp.cells[w][b]);
    let (mut slower, mut faster, mut within, mut unjudged, mut no_runs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (t, target) in cmp.targets.iter().enumerate() {
        if t == b {
            continue;
        }
        let runs = source.reports(&cmp.cells[w][t]);
        if runs.is_empty() {
            // Named apart: in the list of ratios a bare name would read as the next one's.
            no_runs.push(md(target));
            continue;
        }
        let r = ratios[w][t];
        let named = match r {
            Some(r) => format!("{} {}×", md(target), format::ratio(Some(r))),
            None => md(target),
        };
        match (standing(&runs, &base_runs), r) {
            (Standing::Slower, Some(r)) => slower.push((r, named)),
            (Standing::Faster, Some(r)) => faster.push((r, named)),
            (Standing::WithinSpread, _) => within.push(md(target)),
            (_, r) => unjudged.push((r.unwrap_or(f64::NAN), named)),
        }
    }
    slower.sort_by(|a, b| b.0.total_cmp(&a.0));
    faster.sort_by(|a, b| a.0.total_cmp(&b.0));
    let list = |v: Vec<(f64, String)>| v.into_iter().map(|x| x.1).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !slower.is_empty() {
        parts.push(format!(
            "slower than {base} beyond the run-to-run spread: {}",
            list(slower)
        ));
    }
    if !faster.is_empty() {
        parts.push(format!(
            "faster than {base} beyond the spread: {}",
            list(faster)
        ));
    }
    if parts.is_empty() && !within.is_empty() {
        parts.push(format!(
            "no target differs from {base} beyond the run-to-run spread"
        ));
    }
    if !within.is_empty() {
        parts.push(format!("within the spread: {}", within.join(", ")));
    }
    if !unjudged.is_empty() {
        parts.push(format!(
            "not judged, with fewer than 2 runs of it or of {base}: {}",
            list(unjudged)
        ));
    }
    if !no_runs.is_empty() {
        parts.push(format!("no successful run of {}", no_runs.join(", ")));
    }
    if parts.is_empty() {
        parts.push(format!("no target besides {base}"));
    }
    format!("**{name}**: {}.", parts.join("; "))
}

/// What the measured tables are, what the modelled ones are, and why they may disagree,
/// from the device compare.sh described.
fn measured_vs_modelled(cmp: &Comparison) -> String {
    let device = cmp.meta.device.as_deref().unwrap_or("");
    let measured = if device.contains("hddsim emulate") {
        "The **measured** tables are timed on the device above: a loop device over an emulated \
         drive (`hddsim emulate`), so their times are the drive model's, met in real time \
         (FUSE's and the loop device's own time per request added)."
            .to_string()
    } else if device.contains("loop device") {
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
            .map(|p| format!("\"Modelled on {}\"", md(&p.name)))
            .collect();
        format!(
            " The **modelled** tables ({}) are not timed at all: each run's block requests \
             (its trace) are replayed through the drive model of `docs/HDD-MODEL.md`, which \
             charges a spinning drive's seeks, rotations, cache destaging and 512e \
             read-modify-writes. {}",
            names.join(", "),
            if device.contains("hddsim emulate") {
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

/// The `## Verdict` section: per workload, [`verdict_sentence`] on the measured runs, and
/// which tables are measured and which modelled.
pub fn verdict(cmp: &Comparison) -> String {
    let (base, _) = baseline_words(cmp);
    let base = md(&base);
    let mut out = String::from("## Verdict\n\n");
    if cmp.targets.is_empty() || cmp.workloads.is_empty() {
        out.push_str("No runs found under `runs/`.\n\n");
        return out;
    }
    let _ = writeln!(
        out,
        "Per workload, on the measured runs: a target is slower (or faster) than {base} \
         **beyond the run-to-run spread** when its fastest run was slower than {base}'s \
         slowest (or its slowest faster than {base}'s fastest); N× is its median total \
         elapsed / {base}'s. Overlapping ranges are within the spread, and with fewer than 2 \
         runs there is no spread to judge by.\n"
    );
    for w in 0..cmp.workloads.len() {
        let _ = writeln!(out, "- {}", verdict_sentence(cmp, w, Source::Measured));
    }
    out.push('\n');
    out.push_str(&measured_vs_modelled(cmp));
    out.push_str("\n\n");
    out
}

fn summary_table(out: &mut String, cmp: &Comparison, source: Source<'_>) {
    let ratios = ratio_matrix(cmp, source);
    let base = cmp.baseline();
    out.push_str("| Workload |");
    for t in &cmp.targets {
        let _ = write!(out, " {} |", md(t));
    }
    out.push_str("\n| --- |");
    for _ in &cmp.targets {
        out.push_str(" ---: |");
    }
    out.push('\n');
    for (w, (name, row)) in cmp.workloads.iter().zip(&ratios).enumerate() {
        let _ = write!(out, "| {} |", md(name));
        for (t, r) in row.iter().enumerate() {
            let cell = &cmp.cells[w][t];
            let counted = source.reports(cell).len();
            let mut text = if Some(t) == base && r.is_some() {
                "1".to_string()
            } else {
                format::ratio(*r)
            };
            if let (Some(b), Some(_)) = (base, r) {
                if b != t {
                    let base_runs = source.reports(&cmp.cells[w][b]);
                    text.push_str(standing(&source.reports(cell), &base_runs).mark());
                }
            }
            if r.is_some() && counted < cmp.runs {
                let _ = write!(text, " ({counted}/{} runs)", cmp.runs);
            }
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    if let Some(b) = base {
        let base = md(&cmp.targets[b]);
        let _ = writeln!(
            out,
            "\n▲ slower, ▼ faster than {base} beyond the run-to-run spread (every run of the \
             target slower, or faster, than every run of {base}); ~ within the spread (the \
             min–max ranges overlap); no mark: fewer than 2 runs to judge by."
        );
    }
    out.push('\n');
}

fn baseline_words(cmp: &Comparison) -> (String, bool) {
    match cmp.baseline() {
        Some(b) => (cmp.targets[b].clone(), cmp.targets[b] == "minfs"),
        None => ("minfs".to_string(), true),
    }
}

fn header(out: &mut String, cmp: &Comparison) {
    let m = &cmp.meta;
    out.push_str("# minfs-bench comparison\n\n");
    let mut facts = Vec::new();
    if let Some(s) = m.scale {
        facts.push(format!("scale {s}"));
    }
    facts.push(format!(
        "{} run{} per workload and target",
        cmp.runs,
        if cmp.runs == 1 { "" } else { "s" }
    ));
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
         the two middle ones for an even count), with the min–max over those runs. **Ratio** = a \
         target's median total elapsed / {base}'s, so {base} = 1 and above 1 means slower than \
         {base}."
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
}

fn measured_workload(out: &mut String, cmp: &Comparison, w: usize, cdf: Option<&str>) {
    let name = &cmp.workloads[w];
    let ratios = ratio_matrix(cmp, Source::Measured);
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
        let ratio = match ratios[w][t] {
            Some(_) if Some(t) == base => "1".to_string(),
            r => format::ratio(r),
        };
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
fn median_run<'a>(runs: &[&'a Modelled]) -> Option<&'a Modelled> {
    let mut v = runs.to_vec();
    v.sort_by_key(|m| m.report.total_elapsed_ns);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

/// A count with thousands separators (`12,345`), or `—`.
fn opt_count(c: Option<u64>) -> String {
    c.map_or_else(|| "—".to_string(), format::thousands)
}

/// Bytes as MB (10^6) with one decimal, or `—`.
fn opt_mb(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "—".to_string(), |b| format!("{:.1}", b as f64 / 1e6))
}

/// The sum of two optional figures (`None` only when both are missing).
fn sum2(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// One row of [`drive_work_table`]: the cells after the target's name.
fn drive_work_cells(d: &DriveWork) -> Vec<String> {
    let flushes = match (d.flushes, d.preflush_writes, d.fua_writes) {
        (None, None, None) => None,
        (f, p, u) => Some(f.unwrap_or(0) + p.unwrap_or(0) + u.unwrap_or(0)),
    };
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

fn modelled_section(out: &mut String, cmp: &Comparison, p: &Profile, plot: &str) {
    let source = Source::Modelled(&p.id);
    let (base, _) = baseline_words(cmp);
    let _ = writeln!(out, "# Modelled on {}\n", md(&p.name));
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
    summary_table(out, cmp, source);
    let _ = writeln!(
        out,
        "Measured vs modelled ratios: [{plot}]({plot})\n\n![measured vs modelled ratios]({plot})\n"
    );
    let ratios = ratio_matrix(cmp, source);
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
            let ratio = match ratios[w][t] {
                Some(_) if Some(t) == base_idx => "1".to_string(),
                r => format::ratio(r),
            };
            let over = match (f.total, limit) {
                (Some((m, _, _)), Some(l)) if l > 0.0 => Some(m / l),
                _ => None,
            };
            let _ = writeln!(
                out,
                "| {} | {total} | {ratio} | {} | {} | {} | {}/{} |",
                md(target),
                format::mb_per_sec(f.bw),
                format::opt_time(limit),
                format::ratio(over),
                rs.len(),
                cmp.runs
            );
            reports.push(rs);
        }
        drive_work_table(out, cmp, w, &p.id);
        write_hits_table(out, cmp, w, &p.id);
        out.push_str("\nModelled latency per kind of operation (median over runs):\n\n");
        kind_table(out, &cmp.targets, &reports);
    }
}

/// The whole `report.md`.
pub fn markdown(cmp: &Comparison) -> String {
    let files = plot_files(cmp);
    let mut out = String::new();
    header(&mut out, cmp);
    out.push_str(&verdict(cmp));
    definitions(&mut out, cmp);
    let (base, _) = baseline_words(cmp);
    let _ = writeln!(out, "## Summary: ratio of total elapsed to {}\n", md(&base));
    if cmp.targets.is_empty() || cmp.workloads.is_empty() {
        out.push_str("No runs found under `runs/`.\n\n");
    } else {
        summary_table(&mut out, cmp, Source::Measured);
        let _ = writeln!(
            out,
            "Ratios by workload: [{0}]({0})\n\n![ratios]({0})\n",
            files.ratios
        );
    }
    for w in 0..cmp.workloads.len() {
        measured_workload(&mut out, cmp, w, files.cdf[w].as_deref());
    }
    for (p, plot) in cmp.profiles.iter().zip(&files.modelled) {
        modelled_section(&mut out, cmp, p, plot);
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
