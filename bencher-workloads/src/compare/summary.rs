//! The judged part of `report.md`, rendered from the one judgement ([`super::verdict`]): the
//! first screen (drive, date, commit; how many comparisons were decided; one table of
//! workloads × targets; the legend; the plot; the command for the rest), then each
//! comparison's verdict in words, the drive's states, and the method with its assumptions,
//! each once.

use std::fmt::Write as _;

use super::defaults;
use super::format::{self, md};
use super::layout::{Comparison, DriveWork, Profile, Run};
use super::reference;
use super::render::{self, median_run, model_variants, round_totals};
use super::states::{self, State, StateSource};
use super::stats::{self, Judgement, Side};
use super::verdict::{project, Judged, Method, Projection, Verdict, Verdicts};
use super::{png_name, Source};

/// The estimate, the mark and the interval of `v` as the tables print them: `1.03 =▴
/// [1.01–1.05]`, the interval rounded outward with the digits the verdict needs; `1.03 ?`
/// without a bounded interval.
pub fn cell_text(v: &Verdict) -> String {
    let mark = v.judgement.mark(v.side);
    match &v.interval {
        Some(i) => {
            let [e, lo, hi] = printed(v, i.low, i.high);
            format!("{e} {mark} [{lo}–{hi}]")
        }
        None => format!("{} {mark}", format::ratio(Some(v.estimate))),
    }
}

/// `v`'s estimate and interval as printed: rounded outward with as many decimals as keep the
/// printed interval's region and side those of the exact one.
fn printed(v: &Verdict, low: f64, high: f64) -> [String; 3] {
    format::outward(v.estimate, low, high, |l, h| {
        stats::region(l, h) == v.judgement && stats::side(l, h) == v.side
    })
}

/// `1.03× [1.01–1.05]` (or `1.03×` without a bounded interval).
fn ratio_text(v: &Verdict) -> String {
    match &v.interval {
        Some(i) => {
            let [e, lo, hi] = printed(v, i.low, i.high);
            format!("{e}× [{lo}–{hi}]")
        }
        None => format!("{}×", format::ratio(Some(v.estimate))),
    }
}

/// The table of `verdicts`: a row per workload, a column per target but the baseline, each
/// cell [`cell_text`] (`—` where the target has no paired run).
pub fn table(cmp: &Comparison, verdicts: &Verdicts) -> String {
    let Some(b) = cmp.baseline() else {
        return String::new();
    };
    let targets: Vec<usize> = (0..cmp.targets.len()).filter(|&t| t != b).collect();
    let mut out = String::from("| Workload |");
    for &t in &targets {
        let _ = write!(out, " {} |", md(&cmp.targets[t]));
    }
    out.push_str("\n| --- |");
    for _ in &targets {
        out.push_str(" --- |");
    }
    out.push('\n');
    for (w, name) in cmp.workloads.iter().enumerate() {
        let _ = write!(out, "| {} |", md(name));
        for &t in &targets {
            let v = verdicts.cells[w][t]
                .as_ref()
                .filter(|v| v.estimate.is_finite());
            let mut text = v.map_or_else(|| "—".to_string(), cell_text);
            // Beside a verdict the full-scale run contradicts by more than 3 %, its ratio.
            if let (Some(v), Some(r)) = (v, full_scale(cmp, name, &cmp.targets[t])) {
                if reference::differs(v.estimate, r) {
                    let _ = write!(text, " (full scale {r:.2})");
                }
            }
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out
}

/// The full-scale reference's ratio of workload `w` and target `t`, where the comparison has
/// one ([`reference`]).
fn full_scale(cmp: &Comparison, w: &str, t: &str) -> Option<f64> {
    cmp.meta.reference.as_ref()?.ratio(w, t)
}

/// What the first screen says of the full-scale reference: how many comparisons it shares
/// are within 3 % of it, and of each other one what differs, from what the drive did: the
/// share of its reads the drive's cache served, here and at full scale. Empty without a
/// reference.
pub fn against_full_scale(cmp: &Comparison, verdicts: &Verdicts) -> String {
    let Some(r) = &cmp.meta.reference else {
        return String::new();
    };
    let Some(b) = cmp.baseline() else {
        return String::new();
    };
    let pct = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{:.0} %", x * 100.0));
    let (mut shared, mut within) = (0, 0);
    let mut off = Vec::new();
    for (wi, w) in cmp.workloads.iter().enumerate() {
        for (ti, t) in cmp.targets.iter().enumerate() {
            if ti == b {
                continue;
            }
            let (Some(v), Some(ratio)) = (
                verdicts.cells[wi][ti]
                    .as_ref()
                    .filter(|v| v.estimate.is_finite()),
                r.ratio(w, t),
            ) else {
                continue;
            };
            shared += 1;
            if !reference::differs(v.estimate, ratio) {
                within += 1;
                continue;
            }
            let base = &cmp.targets[b];
            let mut line = format!(
                "- {} on {}: {:.2} here, {ratio:.2} at full scale",
                md(t),
                md(w),
                v.estimate
            );
            if let Some(d) = largest_activity_difference(cmp, r, wi, ti, b) {
                let _ = write!(
                    line,
                    "; most of the difference is in {}: their share of {}'s time less their \
                     share of {}'s, {} here, {} at full scale",
                    d.0.words(),
                    md(t),
                    md(base),
                    signed_pct(d.1),
                    signed_pct(d.2)
                );
            }
            let _ = write!(
                line,
                "; the drive's cache served {} of its reads here ({} {}), {} at full scale ({} \
                 {}).",
                pct(reference::cache_share(cmp, wi, ti)),
                md(base),
                pct(reference::cache_share(cmp, wi, b)),
                pct(r.cache_share(w, t)),
                md(base),
                pct(r.cache_share(w, base)),
            );
            off.push(line);
        }
    }
    if shared == 0 {
        return String::new();
    }
    let mut out = format!(
        "**Against full scale** (`{dir}`: the four reference workloads on the whole emulated \
         1 TB drive at scale 1, one run per target): {within} of the {shared} \
         comparisons both have are within {:.0} % of it",
        reference::TOLERANCE * 100.0,
        dir = r.dir
    );
    if off.is_empty() {
        out.push_str(".\n\n");
    } else {
        out.push_str("; the others (their ratio at full scale beside the verdict above):\n\n");
        out.push_str(&off.join("\n"));
        out.push_str("\n\n");
    }
    out
}

/// `+12 %`, `−3 %` (percentage points of a share).
fn signed_pct(x: f64) -> String {
    let p = (x * 100.0).round();
    if p < 0.0 {
        format!("−{:.0} %", -p)
    } else {
        format!("+{p:.0} %")
    }
}

/// The drive activity in which target `ti`'s excess over the baseline `b` (its share of the
/// run's time minus the baseline's) differs most between this comparison and the reference
/// on workload `wi`: (activity, excess here, excess at full scale). `None` without the
/// statistics on both sides.
fn largest_activity_difference(
    cmp: &Comparison,
    r: &reference::Reference,
    wi: usize,
    ti: usize,
    b: usize,
) -> Option<(reference::Activity, f64, f64)> {
    let (w, t, base) = (&cmp.workloads[wi], &cmp.targets[ti], &cmp.targets[b]);
    let (here_t, here_b) = (
        reference::activity_shares(cmp, wi, ti),
        reference::activity_shares(cmp, wi, b),
    );
    let (full_t, full_b) = (r.activity(w, t)?, r.activity(w, base)?);
    reference::Activity::ALL
        .iter()
        .filter_map(|a| {
            let k = a.key();
            let here = here_t.get(k)? - here_b.get(k)?;
            let full = full_t.get(k)? - full_b.get(k)?;
            Some((*a, here, full))
        })
        .max_by(|x, y| (x.1 - x.2).abs().total_cmp(&(y.1 - y.2).abs()))
}

/// The legend of [`table`] in one line.
pub fn legend(base: &str, verdicts: &Verdicts) -> String {
    let estimate = match verdicts.method {
        Method::Mean => "the geometric mean of the per-round ratios",
        Method::Median => "the median of the per-round ratios",
        Method::SignedRank => "the Hodges–Lehmann estimate of the per-round ratios",
    };
    let intervals = if verdicts.comparisons == 0 {
        "no intervals: no comparison has 2 rounds".to_string()
    } else {
        format!("[interval]: all {} together at 95 %", verdicts.comparisons)
    };
    format!(
        "Total elapsed / {base}'s ({estimate}): ▲ slower by more than 5 % · ▼ faster by more \
         than 5 % · = within ±5 % · ? undecided · ▴ ▾ after = or ?: the interval also lies \
         above / below 1 · {intervals}."
    )
}

/// The date and the git revision SETUP.md gives, and the wall time it says the runs took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SetupFacts {
    /// `date (UTC)`.
    pub date: Option<String>,
    /// The first 12 characters of `git revision`.
    pub revision: Option<String>,
    /// The runs' wall time (`Took 14m50s`, `took 3m2s`).
    pub took: Option<String>,
}

impl SetupFacts {
    /// The facts of SETUP.md's text.
    pub fn parse(text: &str) -> SetupFacts {
        let row = |key: &str| {
            text.lines().find_map(|l| {
                let rest = l.strip_prefix(&format!("| {key} | "))?;
                Some(rest.trim_end_matches('|').trim().to_string())
            })
        };
        let took = ["Took ", "took "].iter().find_map(|p| {
            let i = text.find(p)? + p.len();
            let t: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            (!t.is_empty()).then_some(t)
        });
        SetupFacts {
            date: row("date (UTC)"),
            revision: row("git revision").and_then(|r| {
                r.split_whitespace()
                    .next()
                    .map(|h| h.chars().take(12).collect())
            }),
            took,
        }
    }
}

/// Failed runs of `cmp`.
fn failed_runs(cmp: &Comparison) -> usize {
    cmp.cells
        .iter()
        .flatten()
        .flat_map(|c| &c.runs)
        .filter(|r| matches!(r, Run::Failed(_)))
        .count()
}

/// The report's first screen: drive, date and commit; "N of M comparisons decided · wall time ·
/// failed runs"; the table; its legend; the plot; the command for the rest.
pub fn first_screen(cmp: &Comparison, judged: &Judged, facts: &SetupFacts) -> String {
    let mut out = String::from("# minfs-bench comparison\n\n");
    let v = &judged.measured;
    let mut head = vec![capitalised(&render::device_words(cmp))];
    head.push(facts.date.as_ref().map_or_else(
        || "date not recorded".to_string(),
        |d| format!("{} UTC", md(d)),
    ));
    head.push(facts.revision.as_ref().map_or_else(
        || "commit not recorded".to_string(),
        |r| format!("commit {}", md(r)),
    ));
    let _ = writeln!(out, "{}\n", head.join(" · "));
    if render::device_kind(cmp) == render::DeviceKind::Loop {
        out.push_str(
            "Not a spinning drive: what the targets cost in software (no seeks, no rotation, \
             no 512e read-modify-write).\n\n",
        );
    }
    let Some(b) = cmp.baseline().filter(|_| !cmp.workloads.is_empty()) else {
        out.push_str("No runs found under `runs/`.\n\n");
        return out;
    };
    let base = md(&cmp.targets[b]);
    let planned = cmp.workloads.len() * (cmp.targets.len() - 1);
    let (decided, _) = v.decided();
    let failed = failed_runs(cmp);
    let _ = writeln!(
        out,
        "**{decided} of {planned} comparisons decided** · {} · {}\n",
        facts
            .took
            .as_ref()
            .map_or_else(|| "wall time not recorded".to_string(), |t| md(t)),
        match failed {
            0 => "no failed runs".to_string(),
            1 => "1 failed run (below)".to_string(),
            n => format!("{n} failed runs (below)"),
        }
    );
    out.push_str(&table(cmp, v));
    let _ = writeln!(out, "\n{}\n", legend(&base, v));
    out.push_str(&against_full_scale(cmp, v));
    let files = super::plot_files(cmp);
    let _ = writeln!(out, "![measured ratios]({})\n", png_name(&files.ratios));
    match rest_command(cmp, v) {
        Some(rest) => {
            let _ = writeln!(
                out,
                "The rest: `{}` (\"To decide the rest\", below).\n",
                rest.command
            );
        }
        None if v.sequential && decided == planned => {
            out.push_str("Every comparison decided: no rest to run.\n\n");
        }
        None => {}
    }
    out
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// What an undecided comparison's rounds say: `; rounds vary by 4.7 %, about 17 would decide
/// it` (the judged rounds' spread and the projection at the report's level, the rounds set
/// aside counted in), or why none is given.
fn undecided_why(v: &Verdict, verdicts: &Verdicts) -> String {
    let vary = v
        .spread()
        .filter(|_| v.judged.len() >= 3)
        .map(|sd| format!("; rounds vary by {:.1} %", sd * 100.0))
        .unwrap_or_default();
    let projected = match project(&v.judged, v.paired, verdicts.alpha, verdicts.method) {
        Projection::Rounds { total, judged } if total > judged => format!(
            ", about {total} would decide it ({judged} of them with matching states, at their \
             share so far)"
        ),
        Projection::Rounds { total, .. } => format!(", about {total} would decide it"),
        Projection::TooFew if v.paired > v.judged.len() => {
            "; too few rounds with matching states to project".to_string()
        }
        Projection::TooFew => String::new(),
        Projection::Beyond => "; its ratio sits at the end of the ±5 % margin, where no number \
                               of rounds is projected to decide it"
            .to_string(),
    };
    format!("{vary}{projected}")
}

/// `(40 rounds)`, or with rounds set aside `(30 of 40 rounds, both runs reading mostly from
/// the media; 10 set aside, in which xfs read mostly from the drive's cache: 0.86×)`.
fn rounds_text(cmp: &Comparison, t: usize, v: &Verdict, why: &str) -> String {
    let n = v.judged.len();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if v.set_aside.is_empty() {
        return format!("({n} round{}{why})", plural(n));
    }
    let which = match v.judged_state {
        Some(s) => format!(", both runs reading mostly {}", s.words()),
        None => ", both runs in the same state".to_string(),
    };
    let others: Vec<String> = State::ALL
        .iter()
        .filter_map(|&s| {
            let (k, r) = v.set_aside_ratio(s)?;
            Some(format!(
                "{k} set aside, in which {} read mostly {}: {}×",
                md(&cmp.targets[t]),
                s.words(),
                format::ratio(Some(r))
            ))
        })
        .collect();
    format!(
        "({n} of {} rounds{which}; {}{why})",
        v.paired,
        others.join("; ")
    )
}

/// The lowest and highest of target `t`'s modelled estimate on workload `w` across
/// `variants`, with the profiles they come from; `None` with fewer than 2 variants having it.
pub fn variant_range<'a>(
    judged: &Judged,
    w: usize,
    t: usize,
    variants: &[&'a Profile],
) -> Option<(f64, &'a str, f64, &'a str)> {
    let figures: Vec<(f64, &str)> = variants
        .iter()
        .filter_map(|p| {
            let v = judged.modelled.get(&p.id)?.cells[w][t].as_ref()?;
            v.estimate
                .is_finite()
                .then_some((v.estimate, p.id.as_str()))
        })
        .collect();
    if figures.len() < 2 {
        return None;
    }
    let lo = figures.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    let hi = figures.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some((lo.0, lo.1, hi.0, hi.1))
}

/// The verdict on workload `w` of `source` in one sentence: the targets slower or faster by
/// more than 5 %, within ±5 % (with the side where the interval excludes 1) and undecided,
/// each with its estimate, interval and rounds; with `variants`, the range of the estimate
/// across those profiles' replays.
pub fn verdict_sentence(
    cmp: &Comparison,
    judged: &Judged,
    w: usize,
    source: Source<'_>,
    variants: Option<&[&Profile]>,
) -> String {
    let name = md(&cmp.workloads[w]);
    let (Some(b), Some(verdicts)) = (cmp.baseline(), judged.of_source(source)) else {
        return format!("**{name}**: no targets.");
    };
    let base = md(&cmp.targets[b]);
    let (mut slower, mut faster, mut equal, mut undecided, mut no_runs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (t, target) in cmp.targets.iter().enumerate() {
        if t == b {
            continue;
        }
        let Some(v) = verdicts.cells[w][t]
            .as_ref()
            .filter(|v| v.estimate.is_finite())
        else {
            no_runs.push(md(target));
            continue;
        };
        let shipped = variants.and_then(|v| v.first()).map(|p| p.id.as_str());
        let label = |id: &str| match shipped {
            Some(s) if id == s => "shipped".to_string(),
            Some(s) => md(id
                .strip_prefix(s)
                .and_then(|x| x.strip_prefix('-').or_else(|| x.strip_prefix('+')))
                .unwrap_or(id)),
            None => md(id),
        };
        let range = variants
            .and_then(|vs| variant_range(judged, w, t, vs))
            .filter(|(lo, _, hi, _)| hi - lo >= 0.01)
            .map(|(lo, lo_p, hi, hi_p)| {
                format!(
                    " (rule sets {}× {} – {}× {})",
                    format::ratio(Some(lo)),
                    label(lo_p),
                    format::ratio(Some(hi)),
                    label(hi_p)
                )
            })
            .unwrap_or_default();
        let res = format!("{:.1} %", stats::RESOLUTION * 100.0);
        let side = match (v.judgement, v.side) {
            (Judgement::Equal, Some(Side::Slower)) => format!(", slower than {base}"),
            (Judgement::Equal, Some(Side::Faster)) => format!(", faster than {base}"),
            (Judgement::Undecided, Some(Side::Slower)) => format!(
                ", slower than {base} but not known whether by more than 5 % (the interval \
                 reaches within {res} of 1.05)"
            ),
            (Judgement::Undecided, Some(Side::Faster)) => format!(
                ", faster than {base} but not known whether by more than 5 % (the interval \
                 reaches within {res} of 1/1.05)"
            ),
            _ => String::new(),
        };
        let why = match v.judgement {
            Judgement::Undecided if v.interval.is_none() && !verdicts.sequential => format!(
                "; at least {} are needed to bound its interval at this level",
                verdicts.min_rounds.max(2)
            ),
            Judgement::Undecided if verdicts.sequential => undecided_why(v, verdicts),
            _ => String::new(),
        };
        let text = format!(
            "{} {}{side} {}{range}",
            md(target),
            ratio_text(v),
            rounds_text(cmp, t, v, &why)
        );
        let entry = (v.estimate, text);
        match v.judgement {
            Judgement::Slower => slower.push(entry),
            Judgement::Faster => faster.push(entry),
            Judgement::Equal => equal.push(entry),
            Judgement::Undecided => undecided.push(entry),
        }
    }
    slower.sort_by(|a, b| b.0.total_cmp(&a.0));
    faster.sort_by(|a, b| a.0.total_cmp(&b.0));
    let list = |v: Vec<(f64, String)>| v.into_iter().map(|x| x.1).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !slower.is_empty() {
        parts.push(format!(
            "slower than {base} by more than 5 %: {}",
            list(slower)
        ));
    }
    if !faster.is_empty() {
        parts.push(format!(
            "faster than {base} by more than 5 %: {}",
            list(faster)
        ));
    }
    if !equal.is_empty() {
        parts.push(format!("within ±5 % of {base}: {}", list(equal)));
    }
    if !undecided.is_empty() {
        let within = if verdicts.sequential {
            " within the budget"
        } else {
            ""
        };
        parts.push(format!("undecided{within}: {}", list(undecided)));
    }
    if !no_runs.is_empty() {
        parts.push(format!(
            "no round of {} paired with one of {base}",
            no_runs.join(", ")
        ));
    }
    if parts.is_empty() {
        parts.push(format!("no target besides {base}"));
    }
    format!("**{name}**: {}.", parts.join("; "))
}

/// `## Verdicts`: the measured verdict per workload, what a faster target sent to the device,
/// and the command that decides the rest with its size.
pub fn verdicts_section(cmp: &Comparison, judged: &Judged) -> String {
    let mut out = String::from("## Verdicts\n\n");
    let Some(b) = cmp.baseline().filter(|_| !cmp.workloads.is_empty()) else {
        return String::new();
    };
    let base = md(&cmp.targets[b]);
    let _ = writeln!(
        out,
        "Measured on {}, per workload, each target's total elapsed against {base}'s (the \
         method: \"Method and assumptions\", below):\n",
        render::device_words(cmp)
    );
    for w in 0..cmp.workloads.len() {
        let _ = writeln!(
            out,
            "- {}",
            verdict_sentence(cmp, judged, w, Source::Measured, None)
        );
    }
    let why = faster_than_baseline(cmp, &judged.measured);
    if !why.is_empty() {
        let _ = writeln!(
            out,
            "\nWhere a target was faster than {base}, what it sent to the device, from the \
             block traces (median run):\n"
        );
        for line in why {
            let _ = writeln!(out, "- {line}");
        }
    }
    if let Some(rest) = rest_command(cmp, &judged.measured) {
        let m = rest.comparisons;
        let _ = writeln!(
            out,
            "\n**To decide the rest**, run the comparisons left undecided on their own, with \
             this run's device and scales: `{}`{} — a new run planning {m} comparison{} where \
             this one planned {}, so each interval is at {:.2} % instead of {:.2} % (95 % for \
             them together) and fewer rounds decide it; the budget is theirs alone.{}",
            rest.command,
            if cmp.meta.args.is_none() {
                " (with this run's device options: SETUP.md)"
            } else {
                ""
            },
            if m == 1 { "" } else { "s" },
            judged.measured.comparisons,
            (1.0 - super::sequential::alpha(m)) * 100.0,
            judged.measured.confidence() * 100.0,
            rest_size_sentence(cmp, &rest)
        );
    }
    out.push('\n');
    out
}

/// `## Drive states`: where the states come from and, per workload and target, how many runs
/// read mostly from the drive's cache, with an anytime-valid 95 % interval of the share; on a
/// device without per-run statistics, what is known.
pub fn states_section(cmp: &Comparison, judged: &Judged) -> String {
    let v = &judged.measured;
    let Some(b) = cmp.baseline().filter(|_| !cmp.workloads.is_empty()) else {
        return String::new();
    };
    let mut out = String::from("## Drive states\n\n");
    let shipped = model_variants(cmp).map(|(p, _)| p.id.clone());
    let replay_file = format!(
        "`run-K.model-{}.json`",
        md(shipped.as_deref().unwrap_or("PROFILE"))
    );
    let source = match v.states {
        StateSource::Emulator => {
            "from the emulated drive's own statistics of each run (`run-K.emulator.json`)"
                .to_string()
        }
        StateSource::Replay => format!(
            "from the replay of each run's block trace through the model ({replay_file}): this \
             directory has no per-run statistics of the emulator, and a replay, driven at the \
             block layer's issue times rather than the emulator's arrivals, need not take the \
             state the emulated run took (in the runs of 2026-11-27 and -28 the replays read \
             from the media in all but one of the runs whose emulated gets came from the \
             cache: docs/COMPARISON.md, \"Drive states\"), so the states below are the \
             replays'"
        ),
        StateSource::Mixed => format!(
            "from the emulated drive's own statistics of each run (`run-K.emulator.json`) \
             where recorded, else from the replay of the run's block trace ({replay_file}), \
             which need not take the state the emulated run took"
        ),
        StateSource::None => {
            let what = match render::device_kind(cmp) {
                render::DeviceKind::Emulated => {
                    "the runs were neither recorded by the emulator per run nor traced"
                }
                render::DeviceKind::Loop => {
                    "a loop device over an image is no drive: it has no cache state"
                }
                render::DeviceKind::Other => "a real disk reports no statistics per run",
            };
            let method = match v.method {
                Method::Median => {
                    "the verdicts therefore use the median's sequence, which assumes neither \
                     states nor a shape"
                }
                Method::SignedRank => {
                    "the fixed-count interval assumes a log-ratio symmetric about its centre, \
                     which a second state taken by one target and not the other would break"
                }
                Method::Mean => "the verdicts take every round as one state",
            };
            let _ = writeln!(
                out,
                "Not known: {what}. A second state of the drive (on the emulated drive, gets \
                 served from its cache in some runs: docs/COMPARISON.md, \"Drive states\") \
                 would show only in the spread of the per-round ratios (each run's time: the \
                 tables per workload, below); {method} (\"Method and assumptions\").\n"
            );
            return out;
        }
    };
    let used = if v.method == Method::Mean {
        "A comparison is judged on the rounds in which its two runs took the same state; a \
         round whose states differ is set aside and named in its verdict."
    } else {
        "Not being the runs' own, they do not enter the verdicts, which assume no states \
         (\"Method and assumptions\")."
    };
    let _ = writeln!(
        out,
        "A run's state is where the drive served most of its reads, for a workload that gets \
         lumps: **cache** when more came from the drive's cache than from the media, else \
         **media** — taken {source}. {used}\n"
    );
    let rows: Vec<usize> = (0..cmp.workloads.len())
        .filter(|&w| {
            v.baseline_states[w].cache > 0
                || v.cells[w]
                    .iter()
                    .flatten()
                    .any(|c| c.target_states.cache > 0)
        })
        .collect();
    if rows.is_empty() {
        out.push_str("Every run that got lumps read mostly from the media.\n\n");
        return out;
    }
    let _ = writeln!(
        out,
        "Runs whose reads came mostly from the drive's cache, of the runs with statistics, and \
         the share's anytime-valid 95 % interval (a Beta(½, ½) mixture: \
         `bencher-workloads/src/compare/states.rs`); every run of the other workloads read \
         mostly from the media:\n"
    );
    out.push_str("| Workload |");
    for t in &cmp.targets {
        let _ = write!(out, " {} |", md(t));
    }
    out.push_str("\n| --- |");
    for _ in &cmp.targets {
        out.push_str(" ---: |");
    }
    out.push('\n');
    for w in rows {
        let _ = write!(out, "| {} |", md(&cmp.workloads[w]));
        for t in 0..cmp.targets.len() {
            let c = if t == b {
                Some(v.baseline_states[w])
            } else {
                v.cells[w][t].as_ref().map(|c| c.target_states)
            };
            let text = match c.filter(|c| c.total() > 0) {
                Some(c) => {
                    let (lo, hi) = states::frequency_interval(c.cache, c.total(), 0.05);
                    format!(
                        "{} of {} ({:.0}–{:.0} %)",
                        c.cache,
                        c.total(),
                        (lo * 100.0).floor(),
                        (hi * 100.0).ceil()
                    )
                }
                None => "—".to_string(),
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out.push('\n');
    out
}

/// `## Method and assumptions`, once: the estimate, the interval, the verdict's regions, the
/// stopping, what it assumes and what the measured verdict measures.
pub fn method_section(cmp: &Comparison, judged: &Judged) -> String {
    let v = &judged.measured;
    let Some(b) = cmp.baseline().filter(|_| !cmp.workloads.is_empty()) else {
        return String::new();
    };
    let base = md(&cmp.targets[b]);
    let mut out = String::from("## Method and assumptions\n\n");
    let r = stats::regions();
    let regions = format!(
        "The verdict is the region the interval lies in, each clear of the ends of the margin \
         (1.05 and 1/1.05) by the resolution of {res:.1} % — **slower by more than 5 %**: above \
         {slower:.5}; **within ±5 %**: inside {low:.5}–{high:.5}, with \"slower\" or \"faster\" \
         beside it where the interval also excludes 1; **faster by more than 5 %**: below \
         {faster:.5}; otherwise **undecided**. The regions exclude each other. Intervals are \
         rounded outward (the low end down, the high end up), with as many decimals as it takes \
         for the printed interval to give the same verdict.",
        res = stats::RESOLUTION * 100.0,
        slower = r.slower_above,
        low = r.within.0,
        high = r.within.1,
        faster = r.faster_below,
    );
    let assumes = format!(
        "It assumes the rounds independent and, within one state of the drive, a normal shape \
         of the per-round log-ratio; a comparison is judged on the rounds whose two runs took \
         the same state (\"Drive states\", above), and its rounds' spread is taken as at least \
         {:.1} % (a rare level of the drive can hide in rounds tighter than that until it \
         comes). `tests/verdict_stats.rs` checks the rule as the runner runs it on each of the \
         default's comparisons' own measured rounds (docs/COMPARISON.md, \"What each verdict \
         assumes\").",
        super::sequential::SD_FLOOR * 100.0
    );
    if v.comparisons == 0 {
        let _ = writeln!(
            out,
            "Not judged: with fewer than 2 rounds of a target and {base} there is no spread to \
             judge by (N× is the ratio of the one round).\n"
        );
    } else if v.sequential {
        let budget = match v.budget_s {
            Some(s) => format!("the budget ({})", format::time(s * 1e9)),
            None => "the budget".to_string(),
        };
        let (what, assumption, sources) = match v.method {
            Method::Mean => (
                "the geometric mean over the judged rounds; [low–high] its anytime-valid \
                 confidence sequence (a t-mixture e-value of the mean log-ratio, valid however \
                 the rounds are stopped",
                assumes,
                "`bencher-workloads/src/compare/sequential.rs` (`Running`), `verdict.rs`",
            ),
            _ => (
                "the median over the rounds; [low–high] the anytime-valid confidence sequence \
                 of the median log-ratio (the sign test made sequential: a Beta(½, ½) mixture \
                 of the chances a round lies above a candidate median, valid however the \
                 rounds are stopped and whatever their shape",
                "It assumes only that the rounds are independent draws of one law: no normal \
                 shape and no drive states — the runs here carry no statistics of their own \
                 drive (\"Drive states\", above), so the quicker sequence of the mean, which \
                 needs them, is not used; a second state of the drive moves the median little. \
                 `tests/verdict_stats.rs` checks the rule as the runner runs it on measured \
                 rounds (docs/COMPARISON.md, \"What each verdict assumes\")."
                    .to_string(),
                "`bencher-workloads/src/compare/sequential.rs` (`SignRunning`), `verdict.rs`",
            ),
        };
        let _ = writeln!(
            out,
            "N× is a target's total elapsed / {base}'s in the same round, {what}; each at {:.2} \
             %, so that all {} planned comparisons hold together at 95 %: Bonferroni; at least \
             {} rounds to bound one). {regions} Each comparison ran until its interval lay \
             inside one region, or until {budget} could fit no further round of it (undecided, \
             with how much its rounds varied — the standard deviation of the log-ratio — and \
             about how many rounds would decide it at that spread, its ratio and its share of \
             rounds in matching states so far). {assumption} Method and sources: {sources}.\n",
            v.confidence() * 100.0,
            v.comparisons,
            v.min_rounds
        );
    } else {
        let _ = writeln!(
            out,
            "N× is a target's total elapsed / {base}'s in the same round, the Hodges–Lehmann \
             estimate over the judged rounds; [low–high] its confidence interval (the Wilcoxon \
             signed-rank test's, distribution-free for a symmetric log-ratio; each at {:.2} %, \
             so that all {} comparisons hold together at 95 %: Bonferroni; at least {} rounds \
             to bound one). {regions} Every target ran the same number of rounds. Method and \
             sources: `bencher-workloads/src/compare/stats.rs`, `verdict.rs`.\n",
            v.confidence() * 100.0,
            v.comparisons,
            v.min_rounds
        );
    }
    let _ = writeln!(out, "{}\n", render::measured_scope(cmp));
    out
}

/// `## Modelled on the drive`: what needs no model (each target's Cannyls block size and the
/// partial-sector writes counted from the traces), then the shipped rule set's verdict per
/// workload with the range across the rule sets, judged as the measured runs are.
pub fn modelled_summary(cmp: &Comparison, judged: &Judged) -> String {
    let Some((shipped, variants)) = model_variants(cmp) else {
        return String::new();
    };
    if cmp.baseline().is_none() || cmp.workloads.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Modelled on the drive: {} (`{}`)\n\n",
        md(&shipped.name),
        md(&shipped.id)
    );
    let reopen = render::reopen_table(cmp, &shipped.id);
    match (render::block_sizes(cmp), reopen.is_empty()) {
        (Some(sizes), false) => {
            let _ = writeln!(
                out,
                "What needs no model: each target's Cannyls block size ({sizes}), and the \
                 writes counted from the block traces alone.\n"
            );
        }
        (Some(sizes), true) => {
            let _ = writeln!(
                out,
                "What needs no model: each target's Cannyls block size ({sizes}).\n"
            );
        }
        (None, false) => {
            out.push_str("What needs no model: the writes counted from the block traces alone.\n\n")
        }
        (None, true) => {}
    }
    out.push_str(&reopen);
    let others: Vec<String> = variants[1..]
        .iter()
        .map(|p| format!("`{}`", md(&p.id)))
        .collect();
    let _ = writeln!(
        out,
        "The same runs' block requests replayed through the drive model of \
         docs/HDD-MODEL.md under its shipped rules (`{}`){}, judged as the measured runs \
         are (\"Method and assumptions\"), the states the replays':\n",
        md(&shipped.id),
        if others.is_empty() {
            String::new()
        } else {
            format!(
                ", with the lowest and highest estimate across its rule sets (`{}` and {})",
                md(&shipped.id),
                others.join(", ")
            )
        }
    );
    let source = Source::Modelled(&shipped.id);
    let variants_opt = (variants.len() > 1).then_some(&variants[..]);
    for w in 0..cmp.workloads.len() {
        let _ = writeln!(
            out,
            "- {}",
            verdict_sentence(cmp, judged, w, source, variants_opt)
        );
    }
    let scope = if render::device_kind(cmp) == render::DeviceKind::Emulated {
        "The replay keeps the host's timing as measured on the emulated drive, so it agrees \
         with the measured verdict under the emulated rule set; under the other rule sets it \
         shows what the same requests would cost, not how the host would have reacted \
         (only an emulated run shows that)."
    } else {
        "It models a spinning drive's seeks, rotation, cache and 512e read-modify-writes for \
         the requests the runs really issued, with the host's timing as measured here: where \
         the drive would have made the host wait longer, the replay understates it (an \
         emulated run, `--device emulated`, shows that). The rule sets bracket what the \
         sources allow; none is fitted to a measurement."
    };
    let _ = writeln!(out, "\n{scope}\n");
    if let Some(file) = &super::plot_files(cmp).modelled {
        let _ = writeln!(out, "![modelled ratios]({})\n", png_name(file));
    }
    out
}

/// The dots of a ratio plot of `source`: per workload and target its estimate and interval
/// (the report's one judgement), and with `variants` the range of the estimate across them.
pub fn ratio_dots(
    cmp: &Comparison,
    judged: &Judged,
    source: Source<'_>,
    variants: Option<&[&Profile]>,
) -> Vec<Vec<Option<super::plot::Dot>>> {
    let Some(verdicts) = judged.of_source(source) else {
        return vec![Vec::new(); cmp.workloads.len()];
    };
    (0..cmp.workloads.len())
        .map(|w| {
            (0..cmp.targets.len())
                .map(|t| {
                    let v = verdicts.cells[w][t].as_ref()?;
                    v.estimate.is_finite().then(|| super::plot::Dot {
                        ratio: v.estimate,
                        interval: v.interval.map(|i| (i.low, i.high)),
                        range: variants
                            .and_then(|vs| variant_range(judged, w, t, vs))
                            .map(|(lo, _, hi, _)| (lo, hi)),
                    })
                })
                .collect()
        })
        .collect()
}

/// What a plot's bars are: `bars: intervals, 95 % over all N together`.
pub fn interval_note(judged: &Judged, source: Source<'_>) -> String {
    match judged.of_source(source) {
        Some(v) if v.comparisons > 0 => {
            format!("bars: intervals, 95 % over all {} together", v.comparisons)
        }
        _ => "no intervals: fewer than 2 rounds".to_string(),
    }
}

/// For every target whose measured interval lies below 1: one line of what it and the
/// baseline sent to the device (writes, MB written, reads, flushes, from the block traces of
/// the median modelled run — trace counts, the same under every profile) and their Cannyls
/// block sizes. Empty without traces.
fn faster_than_baseline(cmp: &Comparison, verdicts: &Verdicts) -> Vec<String> {
    let (Some(b), Some((shipped, _))) = (cmp.baseline(), model_variants(cmp)) else {
        return Vec::new();
    };
    let work = |w: usize, t: usize| -> Option<(DriveWork, u64)> {
        let run = median_run(&cmp.cells[w][t].modelled(&shipped.id))?;
        Some((
            run.model.work.clone(),
            u64::from(run.report.info.block_size),
        ))
    };
    let describe = |d: &DriveWork, block: u64| {
        let flushes = render::flush_total(d).unwrap_or(0);
        format!(
            "{} writes of {} MB, {} reads of {} MB, {} flushes or FUA writes, block size {block}",
            render::opt_count(d.writes),
            render::opt_mb(d.write_bytes),
            render::opt_count(d.reads),
            render::opt_mb(d.read_bytes),
            format::thousands(flushes)
        )
    };
    let mut out = Vec::new();
    for (w, row) in verdicts.cells.iter().enumerate() {
        for (t, v) in row.iter().enumerate() {
            if !matches!(v, Some(v) if v.side == Some(Side::Faster)) {
                continue;
            }
            let (Some((dt, bt)), Some((db, bb))) = (work(w, t), work(w, b)) else {
                continue;
            };
            out.push(format!(
                "{} on **{}**: {} against {}'s {}.",
                md(&cmp.targets[t]),
                md(&cmp.workloads[w]),
                describe(&dt, bt),
                md(&cmp.targets[b]),
                describe(&db, bb)
            ));
        }
    }
    out
}

/// The command that runs a budget report's undecided comparisons on their own, and what it
/// would take ([`rest_command`]).
pub struct Rest {
    /// The command, each word quoted for a POSIX shell where needed.
    pub command: String,
    /// The comparisons it plans.
    pub comparisons: usize,
    /// What they would take at this run's ratios, spreads and run times, or the comparison
    /// that cannot be projected (workload, target).
    size: Result<RestSize, (usize, usize)>,
    /// Whether the command's `--budget` (and `--max-rounds`) come from `size`.
    sized: bool,
}

/// What a rest command's comparisons would take, projected from this run (an estimate).
#[derive(Debug, Clone, Copy, PartialEq)]
struct RestSize {
    /// The most rounds one comparison would need ([`project`] at the rest's level: its ratio,
    /// spread and share of rounds in matching states so far, a new run's rounds from the
    /// first).
    rounds: usize,
    /// That comparison (workload, target).
    hardest: (usize, usize),
    /// The time of the runs, seconds: per workload, the baseline's run in each round any of
    /// its comparisons still needs, and each comparison's run in each round it needs.
    seconds: f64,
    /// Whether `seconds` rests on the runner's times per run (compare.json's
    /// `seconds_per_run`: preparation and replays included) rather than the runs' own
    /// elapsed times (older directories; preparation not counted).
    steps: bool,
}

impl RestSize {
    /// `seconds` in whole minutes, rounded up (what the command's `--budget` asks for).
    fn minutes(&self) -> f64 {
        (self.seconds / 60.0).ceil()
    }
}

/// For a budget run that left comparisons undecided, the command that runs just them again
/// and how many comparisons it plans: the workloads with an undecided comparison, the baseline
/// and every target undecided on any of them (so it may re-run a few decided ones), their
/// scales where not the default, the budget where not the default, and compare.json's `args`
/// (the device and settings). `None` when nothing was left undecided or the run had a fixed
/// count; a target without a successful run is not offered again. Where compare.json has
/// `seconds_per_run` and the rest is projected to need more than the run's budget
/// ([`rest_size`]), the command asks for that budget instead (whole minutes), and for
/// `--max-rounds` where a comparison needs more than [`defaults::MAX_ROUNDS`].
pub fn rest_command(cmp: &Comparison, verdicts: &Verdicts) -> Option<Rest> {
    if !verdicts.sequential {
        return None;
    }
    let b = cmp.baseline()?;
    let open = |w: usize, t: usize| {
        t != b
            && !Source::Measured.reports(&cmp.cells[w][t]).is_empty()
            && verdicts.cells[w][t]
                .as_ref()
                .is_none_or(|v| v.judgement == Judgement::Undecided)
    };
    let targets = 0..cmp.targets.len();
    let workloads: Vec<usize> = (0..cmp.workloads.len())
        .filter(|&w| targets.clone().any(|t| open(w, t)))
        .collect();
    if workloads.is_empty() {
        return None;
    }
    let targets: Vec<usize> = targets
        .filter(|&t| t == b || workloads.iter().any(|&w| open(w, t)))
        .collect();
    let names = |list: &[usize], of: &[String]| {
        list.iter()
            .map(|&i| of[i].as_str())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut cmd = vec!["scripts/compare.sh".to_string()];
    cmd.extend(cmp.meta.args.iter().flatten().cloned());
    cmd.push(format!("--workloads={}", names(&workloads, &cmp.workloads)));
    cmd.push(format!("--targets={}", names(&targets, &cmp.targets)));
    let scales: Vec<String> = workloads
        .iter()
        .filter_map(|&w| {
            let name = &cmp.workloads[w];
            let s = *cmp.meta.scales.as_ref()?.get(name)?;
            (defaults::scale(name) != Some(s)).then(|| format!("{name}={s}"))
        })
        .collect();
    if !scales.is_empty() {
        cmd.push(format!("--scale={}", scales.join(",")));
    }
    let m = workloads.len() * (targets.len() - 1);
    let size = rest_size(
        cmp,
        verdicts,
        b,
        &workloads,
        &targets,
        super::sequential::alpha(m),
    );
    let run_budget = cmp.meta.budget_s.unwrap_or(defaults::BUDGET_S);
    let sized = size
        .as_ref()
        .ok()
        .filter(|s| s.steps && s.seconds > run_budget)
        .map(RestSize::minutes);
    if let Some(minutes) = sized {
        cmd.push(format!("--budget={minutes}m"));
    } else if let Some(budget) = cmp.meta.budget_s.filter(|b| *b != defaults::BUDGET_S) {
        cmd.push(format!("--budget={}s", budget.round()));
    }
    if let Ok(s) = &size {
        if s.steps && s.rounds > defaults::MAX_ROUNDS as usize {
            cmd.push(format!("--max-rounds={}", s.rounds));
        }
    }
    let cmd: Vec<String> = cmd.iter().map(|a| shell_word(a)).collect();
    Some(Rest {
        command: cmd.join(" "),
        comparisons: m,
        size,
        sized: sized.is_some(),
    })
}

/// [`RestSize`] of the comparisons of `workloads` × `targets` (but the baseline `b`) at
/// `alpha`; `Err` naming one that cannot be projected (fewer than 3 judged rounds, more than
/// [`super::sequential::ROUNDS_NEEDED_CAP`] rounds, or more than a run can hold).
fn rest_size(
    cmp: &Comparison,
    verdicts: &Verdicts,
    b: usize,
    workloads: &[usize],
    targets: &[usize],
    alpha: f64,
) -> Result<RestSize, (usize, usize)> {
    let step = |w: usize, t: usize| {
        cmp.meta
            .seconds_per_run
            .as_ref()?
            .get(&cmp.workloads[w])?
            .get(&cmp.targets[t])
            .copied()
    };
    let steps = workloads
        .iter()
        .all(|&w| targets.iter().all(|&t| step(w, t).is_some()));
    // The time of one run: the runner's where it has them all, else the runs' own mean.
    let per_run = |w: usize, t: usize| {
        if steps {
            return step(w, t).unwrap_or(0.0);
        }
        let own: Vec<f64> = round_totals(&cmp.cells[w][t], Source::Measured)
            .into_iter()
            .flatten()
            .collect();
        own.iter().sum::<f64>() / own.len().max(1) as f64 / 1e9
    };
    let mut size = RestSize {
        rounds: 0,
        hardest: (0, 0),
        seconds: 0.0,
        steps,
    };
    for &w in workloads {
        let mut most = 0;
        for &t in targets.iter().filter(|&&t| t != b) {
            let k = verdicts.cells[w][t]
                .as_ref()
                .and_then(
                    |v| match project(&v.judged, v.paired, alpha, verdicts.method) {
                        Projection::Rounds { total, .. } => Some(total),
                        _ => None,
                    },
                )
                .filter(|k| *k <= super::layout::MAX_RUNS)
                .ok_or((w, t))?;
            if k > size.rounds {
                size.rounds = k;
                size.hardest = (w, t);
            }
            most = most.max(k);
            size.seconds += k as f64 * per_run(w, t);
        }
        size.seconds += most as f64 * per_run(w, b);
    }
    Ok(size)
}

/// What "To decide the rest" says of its size: the rounds and time projected, and whether the
/// command's budget comes from them.
fn rest_size_sentence(cmp: &Comparison, rest: &Rest) -> String {
    let name =
        |(w, t): (usize, usize)| format!("{} on {}", md(&cmp.targets[t]), md(&cmp.workloads[w]));
    match &rest.size {
        Err(c) => format!(
            " How long that takes is not projected: {} has too few rounds in matching states, \
             or rounds too spread, to project.",
            name(*c)
        ),
        Ok(s) => {
            let minutes = s.minutes();
            let mut out = format!(
                " At this run's ratios, spreads and shares of rounds in matching states they \
                 would need up to about {} rounds ({}) and about {minutes} minutes of runs",
                s.rounds,
                name(s.hardest)
            );
            if !s.steps {
                out.push_str(
                    ", counting the runs' own time only (this directory has no \
                     `seconds_per_run`: preparation not counted, the budget not sized)",
                );
            } else {
                out.push_str(" (each with its preparation, as measured here)");
                let more_rounds = s.rounds > defaults::MAX_ROUNDS as usize;
                if rest.sized {
                    out.push_str(", which the command's `--budget` asks for");
                    if more_rounds {
                        out.push_str(" with `--max-rounds`");
                    }
                } else if more_rounds {
                    out.push_str(
                        ", within this run's budget but over the rounds a run takes by default: \
                         the command's `--max-rounds`",
                    );
                }
            }
            out.push_str(
                ": an estimate from the rounds so far, which a spread measured in few rounds, or \
                 a state of the drive not yet seen, can make short.",
            );
            out
        }
    }
}

/// `word` as one word of a POSIX shell command: as it is where it holds only characters no
/// shell treats specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_facts_from_setup_md() {
        let text = "| | |\n| --- | --- |\n| date (UTC) | 2026-11-28 20:32 |\n\
                    | stopping | a time budget … would not fit. Took 14m50s; the round … |\n\
                    | git revision | 725b039c9e998101c5363480e6ec649e756433d2 when the run \
                    started |\n";
        let f = SetupFacts::parse(text);
        assert_eq!(f.date.as_deref(), Some("2026-11-28 20:32"));
        assert_eq!(f.revision.as_deref(), Some("725b039c9e99"));
        assert_eq!(f.took.as_deref(), Some("14m50s"));
        let f = SetupFacts::parse("| stopping | a fixed count of rounds (`--runs`); took 3m2s |");
        assert_eq!(f.took.as_deref(), Some("3m2s"));
        assert_eq!(SetupFacts::parse(""), SetupFacts::default());
    }

    #[test]
    fn cells_print_intervals_that_agree_with_their_verdicts() {
        let v = |estimate: f64, low: f64, high: f64| {
            let i = stats::Interval {
                ratio: estimate,
                low,
                high,
                rounds: 5,
            };
            Verdict {
                estimate,
                interval: Some(i),
                judgement: stats::judge(&i),
                side: i.side(),
                judged: vec![0.0; 5],
                judged_state: None,
                paired: 5,
                set_aside: Vec::new(),
                target_states: states::Counts::default(),
            }
        };
        // Slower by more than 5 %, its low end just above 1.05 × 1.005 (1.05525): four
        // decimals.
        assert_eq!(
            cell_text(&v(1.1, 1.05531, 1.17)),
            "1.1000 ▲ [1.0553–1.1700]"
        );
        // Within ±5 % and faster, its high end just below 1: 0.9998, not 1.00.
        assert_eq!(
            cell_text(&v(0.97, 0.95812, 0.99981)),
            "0.9700 =▾ [0.9581–0.9999]"
        );
        // Undecided, above 1: "?▴".
        assert_eq!(
            cell_text(&v(1.05, 1.0016, 1.0543)),
            "1.050 ?▴ [1.001–1.055]"
        );
        assert_eq!(cell_text(&v(1.0, 0.98, 1.02)), "1.00 = [0.98–1.02]");
    }
}
