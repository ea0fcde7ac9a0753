//! `report.md`: the figures of a [`Comparison`] as Markdown tables.

use std::fmt::Write as _;

use super::defaults;
use super::format::{self, md};
use super::layout::{Cell, Comparison, DriveWork, Modelled, Profile, Run};
use super::plot::Dot;
use super::sequential;
use super::stats::{self, Interval, Judgement};
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

/// The per-round log-ratios of target `t` to the baseline `b` on workload `w`, from `source`'s
/// totals ([`sequential::paired_log_ratios`]).
fn cell_log_ratios(cmp: &Comparison, w: usize, t: usize, b: usize, source: Source<'_>) -> Vec<f64> {
    sequential::paired_log_ratios(
        &round_totals(&cmp.cells[w][t], source),
        &round_totals(&cmp.cells[w][b], source),
    )
}

/// A target judged against the baseline on one workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// The ratio and its interval.
    pub interval: Interval,
    /// The verdict on it.
    pub judgement: Judgement,
}

/// The judgements of one source (measured, or one profile's modelled runs) over a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgements {
    /// `cells[w][t]`: `None` for the baseline and where fewer than 2 rounds pair.
    pub cells: Vec<Vec<Option<Judged>>>,
    /// The comparisons judged (the family the intervals are simultaneous over).
    pub comparisons: usize,
    /// The confidence of each interval.
    pub confidence: f64,
    /// The fewest rounds an interval at that confidence needs; a comparison with fewer is not
    /// judged ([`stats::min_rounds`], [`sequential::min_rounds`]).
    pub min_rounds: usize,
    /// Whether the intervals are a confidence sequence's (a budget run, each comparison
    /// stopped once decided: [`sequential`]) rather than fixed-count signed-rank intervals.
    pub sequential: bool,
    /// A budget run's `--budget`, seconds.
    pub budget_s: Option<f64>,
}

/// Every target against the baseline, per workload (see [`stats`] for the method): the
/// intervals are simultaneous over all the comparisons of `source` in the report.
pub fn judgements(cmp: &Comparison, source: Source<'_>) -> Judgements {
    let Some(b) = cmp.baseline() else {
        return Judgements {
            cells: vec![Vec::new(); cmp.workloads.len()],
            comparisons: 0,
            confidence: stats::confidence(1),
            min_rounds: stats::min_rounds(stats::confidence(1)),
            sequential: cmp.meta.sequential(),
            budget_s: cmp.meta.budget_s,
        };
    };
    let totals: Vec<Vec<Vec<Option<f64>>>> = cmp
        .cells
        .iter()
        .map(|row| row.iter().map(|c| round_totals(c, source)).collect())
        .collect();
    if cmp.meta.sequential() {
        return sequential_judgements(cmp, b, &totals);
    }
    // First the family: the comparisons with at least 2 paired rounds.
    let paired = |w: usize, t: usize| {
        totals[w][t]
            .iter()
            .zip(&totals[w][b])
            .filter(|(x, y)| x.is_some() && y.is_some())
            .count()
    };
    let comparisons = (0..cmp.workloads.len())
        .flat_map(|w| (0..cmp.targets.len()).map(move |t| (w, t)))
        .filter(|&(w, t)| t != b && paired(w, t) >= 2)
        .count();
    let confidence = stats::confidence(comparisons);
    let cells = judged_cells(cmp, b, |w, t| {
        stats::paired_interval(&totals[w][t], &totals[w][b], confidence)
    });
    Judgements {
        cells,
        comparisons,
        confidence,
        min_rounds: stats::min_rounds(confidence),
        sequential: false,
        budget_s: None,
    }
}

/// Per workload and target, the verdict on `interval_of(w, t)`: `None` for the baseline `b`
/// and where the interval is missing or unbounded (not judged).
fn judged_cells(
    cmp: &Comparison,
    b: usize,
    interval_of: impl Fn(usize, usize) -> Option<Interval>,
) -> Vec<Vec<Option<Judged>>> {
    (0..cmp.workloads.len())
        .map(|w| {
            (0..cmp.targets.len())
                .map(|t| {
                    if t == b {
                        return None;
                    }
                    let interval = interval_of(w, t).filter(|i| i.high.is_finite())?;
                    Some(Judged {
                        interval,
                        judgement: stats::judge(&interval),
                    })
                })
                .collect()
        })
        .collect()
}

/// [`judgements`] of a budget run: each comparison's confidence sequence ([`sequential`]) at
/// 0.05/M, M the comparisons planned (every workload × every target but the baseline), so the
/// family does not depend on which comparisons stopped when. A comparison whose sequence is
/// still unbounded is `None` (undecided).
fn sequential_judgements(
    cmp: &Comparison,
    b: usize,
    totals: &[Vec<Vec<Option<f64>>>],
) -> Judgements {
    let comparisons = cmp.workloads.len() * cmp.targets.len().saturating_sub(1);
    let alpha = sequential::alpha(comparisons);
    let cells = judged_cells(cmp, b, |w, t| {
        sequential::interval(
            &sequential::paired_log_ratios(&totals[w][t], &totals[w][b]),
            alpha,
        )
    });
    Judgements {
        cells,
        comparisons,
        confidence: 1.0 - alpha,
        min_rounds: sequential::min_rounds(alpha),
        sequential: true,
        budget_s: cmp.meta.budget_s,
    }
}

/// What the runner decides after a round (`minfs-bench compare --budget`): per workload and
/// target (the comparison's order), `None` for the baseline, else the measured verdict so far
/// — `Judgement::Undecided` while the comparison must go on. The same function the report's
/// verdict uses ([`judgements`]), so the rule that stops a comparison is the report's.
pub fn decide(cmp: &Comparison) -> Vec<Vec<Option<Judgement>>> {
    let judged = judgements(cmp, Source::Measured);
    let b = cmp.baseline();
    judged
        .cells
        .iter()
        .map(|row| {
            (0..cmp.targets.len())
                .map(|t| {
                    if Some(t) == b {
                        None
                    } else {
                        Some(
                            row.get(t)
                                .copied()
                                .flatten()
                                .map_or(Judgement::Undecided, |j| j.judgement),
                        )
                    }
                })
                .collect()
        })
        .collect()
}

/// For a budget run's undecided comparison with the per-round log-ratios `d`: `; rounds vary
/// by 4.7 %, about 17 would decide it` — their sample deviation and the rounds
/// [`sequential::rounds_needed`] projects at the report's level `alpha`, were their mean and
/// spread to stay as they are. Empty with fewer than 3 rounds (no spread worth the name).
fn undecided_why(d: &[f64], alpha: f64) -> String {
    if d.len() < 3 {
        return String::new();
    }
    match sequential::projection(d, alpha) {
        Some((_, sd, needed)) => format!(
            "; rounds vary by {:.1} %, {} would decide it",
            sd * 100.0,
            needed.map_or_else(
                || format!("more than {}", sequential::ROUNDS_NEEDED_CAP),
                |k| format!("about {k}")
            )
        ),
        None => String::new(),
    }
}

/// A comparison's rounds so far and the rounds it would need (`None`: fewer than 2 rounds, or
/// beyond [`sequential::ROUNDS_NEEDED_CAP`]).
pub type Projection = (usize, Option<usize>);

/// What the runner prices a comparison by after a round (`minfs-bench compare --budget`,
/// [`super::allocate`]): per workload and target (`None` for the baseline), the measured rounds
/// it has with the baseline and the rounds its sequence would need at their mean and spread
/// ([`sequential::projection`] at the report's level; `None` inside with fewer than 2 rounds or
/// beyond the cap).
pub fn projections(cmp: &Comparison) -> Vec<Vec<Option<Projection>>> {
    let comparisons = cmp.workloads.len() * cmp.targets.len().saturating_sub(1);
    let alpha = sequential::alpha(comparisons);
    let b = cmp.baseline();
    (0..cmp.workloads.len())
        .map(|w| {
            (0..cmp.targets.len())
                .map(|t| {
                    let b = b.filter(|b| *b != t)?;
                    let d = cell_log_ratios(cmp, w, t, b, Source::Measured);
                    Some((d.len(), sequential::projection(&d, alpha).and_then(|p| p.2)))
                })
                .collect()
        })
        .collect()
}

/// `1.42× [1.30–1.55]`, or `1.42×` without an interval.
fn ratio_with_interval(r: f64, i: Option<&Interval>) -> String {
    match i {
        Some(i) => format!(
            "{}× [{}–{}]",
            format::ratio(Some(r)),
            format::ratio(Some(i.low)),
            format::ratio(Some(i.high))
        ),
        None => format!("{}×", format::ratio(Some(r))),
    }
}

/// The verdict on workload `w`: one sentence naming the targets found slower or faster than
/// the baseline (with the ratio and its interval), those within ±5 %, those where no
/// difference was found, and those not judged. With `variants`, after each target the range
/// of its ratio across those profiles' modelled runs.
pub fn verdict_sentence(cmp: &Comparison, w: usize, source: Source<'_>) -> String {
    verdict_sentence_with(cmp, w, source, &judgements(cmp, source), None)
}

fn verdict_sentence_with(
    cmp: &Comparison,
    w: usize,
    source: Source<'_>,
    judged: &Judgements,
    variants: Option<&[&Profile]>,
) -> String {
    let name = md(&cmp.workloads[w]);
    let Some(b) = cmp.baseline() else {
        return format!("**{name}**: no targets.");
    };
    let base = md(&cmp.targets[b]);
    let ratios = ratio_matrix(cmp, source);
    let (mut slower, mut faster, mut equal, mut undecided, mut unjudged, mut no_runs) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for (t, target) in cmp.targets.iter().enumerate() {
        if t == b {
            continue;
        }
        if source.reports(&cmp.cells[w][t]).is_empty() {
            // Named apart: in the list of ratios a bare name would read as the next one's.
            no_runs.push(md(target));
            continue;
        }
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
            .and_then(|v| variant_range(cmp, w, t, v))
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
        // A budget run stops each comparison when decided: say after how many rounds, and for
        // one still undecided why — how much its rounds vary and how many rounds would decide
        // it at that spread and its mean so far.
        let alpha = 1.0 - judged.confidence;
        let log_ratios = || cell_log_ratios(cmp, w, t, b, source);
        let rounds = |n: usize, why: &str| {
            if judged.sequential {
                format!(" ({n} round{}{why})", if n == 1 { "" } else { "s" })
            } else {
                String::new()
            }
        };
        match judged.cells[w][t] {
            Some(j) => {
                let why = if judged.sequential && j.judgement == Judgement::Undecided {
                    undecided_why(&log_ratios(), alpha)
                } else {
                    String::new()
                };
                let text = format!(
                    "{} {}{}{range}",
                    md(target),
                    ratio_with_interval(j.interval.ratio, Some(&j.interval)),
                    rounds(j.interval.rounds, &why)
                );
                let entry = (j.interval.ratio, text);
                match j.judgement {
                    Judgement::Slower => slower.push(entry),
                    Judgement::Faster => faster.push(entry),
                    Judgement::Equal => equal.push(entry),
                    Judgement::Undecided => undecided.push(entry),
                }
            }
            None => {
                let r = ratios[w][t];
                let text = match r {
                    Some(r) => format!("{} {}{range}", md(target), ratio_with_interval(r, None)),
                    None => md(target),
                };
                if judged.sequential {
                    let d = log_ratios();
                    let why = undecided_why(&d, alpha);
                    undecided.push((
                        r.unwrap_or(f64::NAN),
                        format!("{text}{}", rounds(d.len(), &why)),
                    ));
                } else {
                    unjudged.push((r.unwrap_or(f64::NAN), text));
                }
            }
        }
    }
    slower.sort_by(|a, b| b.0.total_cmp(&a.0));
    faster.sort_by(|a, b| a.0.total_cmp(&b.0));
    let list = |v: Vec<(f64, String)>| v.into_iter().map(|x| x.1).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !slower.is_empty() {
        parts.push(format!("slower than {base}: {}", list(slower)));
    }
    if !faster.is_empty() {
        parts.push(format!("faster than {base}: {}", list(faster)));
    }
    if !equal.is_empty() {
        parts.push(format!("within ±5 % of {base}: {}", list(equal)));
    }
    if !undecided.is_empty() {
        if judged.sequential {
            parts.push(format!(
                "undecided against {base} within the budget: {}",
                list(undecided)
            ));
        } else {
            parts.push(format!(
                "no difference from {base} found at this resolution: {}",
                list(undecided)
            ));
        }
    }
    if !unjudged.is_empty() {
        parts.push(format!(
            "not judged, with fewer than {} rounds of it and {base}: {}",
            judged.min_rounds.max(2),
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

/// For a budget run that left comparisons undecided, the command that runs just them again
/// and how many comparisons it plans: the workloads with an undecided comparison, the baseline
/// and every target undecided on any of them (so it may re-run a few decided ones), their
/// scales where not the default, the budget where not the default, and compare.json's `args`
/// (the device and settings). `None` when nothing was left undecided or the run had a fixed
/// count; a target without a successful run is not offered again. Where compare.json has
/// `seconds_per_run` and the rest is projected to need more than the run's budget
/// ([`rest_size`]), the command asks for that budget instead (whole minutes), and for
/// `--max-rounds` where a comparison needs more than [`defaults::MAX_ROUNDS`].
fn rest_command(cmp: &Comparison, judged: &Judgements) -> Option<Rest> {
    if !judged.sequential {
        return None;
    }
    let b = cmp.baseline()?;
    let open = |w: usize, t: usize| {
        t != b
            && !Source::Measured.reports(&cmp.cells[w][t]).is_empty()
            && judged.cells[w][t].is_none_or(|j| j.judgement == Judgement::Undecided)
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
    let size = rest_size(cmp, b, &workloads, &targets, sequential::alpha(m));
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

/// The command that runs a budget report's undecided comparisons on their own, and what it
/// would take ([`rest_command`]).
struct Rest {
    command: String,
    /// The comparisons it plans.
    comparisons: usize,
    /// What they would take at this run's ratios, spreads and run times, or the comparison
    /// that cannot be projected (workload, target).
    size: Result<RestSize, (usize, usize)>,
    /// Whether the command's `--budget` (and `--max-rounds`) come from `size`.
    sized: bool,
}

/// What a rest command's comparisons would take, projected from this run (an estimate).
#[derive(Debug, Clone, Copy, PartialEq)]
struct RestSize {
    /// The most rounds one comparison would need ([`sequential::projection`] at the rest's
    /// level: its ratio and spread so far, a new run's rounds from the first).
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

/// [`RestSize`] of the comparisons of `workloads` × `targets` (but the baseline `b`) at
/// `alpha`; `Err` naming one that cannot be projected (fewer than 2 rounds, more than
/// [`sequential::ROUNDS_NEEDED_CAP`] rounds, or more than a run can hold).
fn rest_size(
    cmp: &Comparison,
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
            let k = sequential::projection(&cell_log_ratios(cmp, w, t, b, Source::Measured), alpha)
                .and_then(|p| p.2)
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
            " How long that takes is not projected: {} has too few rounds, or rounds too \
             spread, to project.",
            name(*c)
        ),
        Ok(s) => {
            let minutes = s.minutes();
            let mut out = format!(
                " At this run's ratios and spreads they would need up to about {} rounds ({}) \
                 and about {minutes} minutes of runs",
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
                 a second state of the drive not yet seen, can make short.",
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

/// The lowest and highest of target `t`'s modelled ratio on workload `w` across `variants`,
/// with the profiles they come from; `None` with fewer than 2 variants having it.
fn variant_range<'a>(
    cmp: &Comparison,
    w: usize,
    t: usize,
    variants: &[&'a Profile],
) -> Option<(f64, &'a str, f64, &'a str)> {
    let figures: Vec<(f64, &str)> = variants
        .iter()
        .filter_map(|p| {
            Some((
                ratio_matrix(cmp, Source::Modelled(&p.id))[w][t]?,
                p.id.as_str(),
            ))
        })
        .collect();
    if figures.len() < 2 {
        return None;
    }
    let lo = figures.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    let hi = figures.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    Some((lo.0, lo.1, hi.0, hi.1))
}

/// The dots of a ratio plot: per workload and target its ratio (the judged interval's where
/// judged, else the ratio of medians), its interval, and with `variants` the range across
/// them.
pub fn ratio_dots(
    cmp: &Comparison,
    source: Source<'_>,
    variants: Option<&[&Profile]>,
) -> Vec<Vec<Option<Dot>>> {
    let judged = judgements(cmp, source);
    let ratios = ratio_matrix(cmp, source);
    (0..cmp.workloads.len())
        .map(|w| {
            (0..cmp.targets.len())
                .map(|t| {
                    if Some(t) == cmp.baseline() {
                        return None;
                    }
                    let j = judged.cells[w][t];
                    let ratio = j.map(|j| j.interval.ratio).or(ratios[w][t])?;
                    Some(Dot {
                        ratio,
                        interval: j.map(|j| (j.interval.low, j.interval.high)),
                        range: variants
                            .and_then(|v| variant_range(cmp, w, t, v))
                            .map(|(lo, _, hi, _)| (lo, hi)),
                    })
                })
                .collect()
        })
        .collect()
}

/// What a plot's bars are: `bars: 95 % simultaneous intervals (N comparisons)`.
pub fn interval_note(cmp: &Comparison, source: Source<'_>) -> String {
    let j = judgements(cmp, source);
    if j.comparisons == 0 {
        "no intervals: fewer than 2 rounds".to_string()
    } else {
        format!("bars: intervals, 95 % over all {} together", j.comparisons)
    }
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
fn device_words(cmp: &Comparison) -> String {
    let device = cmp.meta.device.as_deref().unwrap_or("");
    if let Some(i) = device.find("hddsim emulate --profile ") {
        let rest = &device[i + "hddsim emulate --profile ".len()..];
        let profile = rest
            .split(|c: char| c.is_whitespace() || c == ':' || c == ')')
            .next()
            .unwrap_or("");
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

/// What the measured verdict measures and what it does not, in two sentences.
fn measured_scope(cmp: &Comparison) -> String {
    let device = cmp.meta.device.as_deref().unwrap_or("");
    if device.contains("hddsim emulate") {
        "It measures the host's real behaviour (Cannyls, the filesystem, the page cache, the \
         kernel's block layer) against the drive model in real time: every reply waits for the \
         modelled completion. It is only as right as the model (docs/HDD-MODEL.md) and its rule \
         set, and it adds the emulator's own time per request (`emulation-check.md`)."
            .to_string()
    } else if device.contains("loop device") {
        "It measures Cannyls' and the kernel's CPU and I/O paths on a loop device over an image \
         file on this machine: what the targets cost in software. It does not measure a \
         spinning drive — no seeks, no rotation, no 512e read-modify-write; a flush is an \
         `fsync` of the image on the host."
            .to_string()
    } else {
        "It measures the runs on that device.".to_string()
    }
}

/// Per target, the Cannyls block size its runs used (from the run reports), `minfs 4096,
/// ext4 512, …`; `None` when no run says.
fn block_sizes(cmp: &Comparison) -> Option<String> {
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
fn reopen_table(cmp: &Comparison, profile: &str) -> String {
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
                "| {} | {} | {block} | {}/{} | {} |",
                md(name),
                md(target),
                runs.len(),
                cmp.runs,
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

/// For every target the measured verdict finds faster than the baseline: one line of what it
/// and the baseline sent to the device (writes, MB written, reads, flushes, from the block
/// traces of the median modelled run — trace counts, the same under every profile) and their
/// Cannyls block sizes. Empty without traces.
fn faster_than_baseline(cmp: &Comparison, judged: &Judgements) -> Vec<String> {
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
        let flushes = flush_total(d).unwrap_or(0);
        format!(
            "{} writes of {} MB, {} reads of {} MB, {} flushes or FUA writes, block size {block}",
            opt_count(d.writes),
            opt_mb(d.write_bytes),
            opt_count(d.reads),
            opt_mb(d.read_bytes),
            format::thousands(flushes)
        )
    };
    let mut out = Vec::new();
    for (w, row) in judged.cells.iter().enumerate() {
        for (t, j) in row.iter().enumerate() {
            if !matches!(j, Some(j) if j.judgement == Judgement::Faster) {
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

/// The method in one paragraph, for `judged`.
fn method_line(judged: &Judgements, base: &str) -> String {
    if judged.comparisons == 0 {
        return format!(
            "Not judged: with fewer than 2 rounds of a target and {base} there is no spread to \
             judge by (N× is the ratio of medians)."
        );
    }
    if judged.sequential {
        let budget = match judged.budget_s {
            Some(b) => format!("the budget ({})", format::time(b * 1e9)),
            None => "the budget".to_string(),
        };
        return format!(
            "N× is a target's total elapsed / {base}'s in the same round, the geometric mean \
             over the rounds; [low–high] its anytime-valid confidence sequence (a t-mixture \
             e-value, valid however the rounds are stopped; each at {:.2} %, so that all {} \
             planned comparisons hold together at 95 %: Bonferroni; at least {} rounds to bound \
             one). Each comparison ran until decided or until {budget} could fit no further \
             round of it: within ±5 %: the interval lies inside 0.952–1.05; else slower or faster: \
             it lies above or below 1; else undecided within the budget, with how much its rounds \
             varied (the standard deviation of the log-ratio) and about how many rounds would \
             have decided it at that spread and its ratio so far. The sequence assumes \
             independent rounds of a normal shape, checked on noise measured here. Method and \
             sources: `bencher-workloads/src/compare/sequential.rs`.",
            judged.confidence * 100.0,
            judged.comparisons,
            judged.min_rounds
        );
    }
    format!(
        "N× is a target's total elapsed / {base}'s in the same round, the Hodges–Lehmann \
         estimate over the rounds; [low–high] its confidence interval (the Wilcoxon signed-rank \
         test's, distribution-free; each interval at {:.2} %, so that all {} comparisons hold \
         together at 95 %: Bonferroni; that needs at least {} rounds, and a comparison with \
         fewer is not judged). Within ±5 %: the interval lies inside 0.952–1.05; else slower \
         or faster: it lies above or below 1; otherwise no difference was found at this \
         resolution. Method and sources: `bencher-workloads/src/compare/stats.rs`.",
        judged.confidence * 100.0,
        judged.comparisons,
        judged.min_rounds
    )
}

/// The `## Summary` section a reader can stop after: the measured verdict and, where the runs
/// were traced, the modelled drive's verdict with the range across the model's rule sets,
/// each with what it measures and what it does not.
pub fn verdict(cmp: &Comparison) -> String {
    let (base, _) = baseline_words(cmp);
    let base = md(&base);
    let mut out = String::from("## Summary\n\n");
    if cmp.targets.is_empty() || cmp.workloads.is_empty() {
        out.push_str("No runs found under `runs/`.\n\n");
        return out;
    }
    let files = plot_files(cmp);
    let _ = writeln!(
        out,
        "### Measured on {}\n\nPer workload, each target's total elapsed against {base}'s:\n",
        device_words(cmp)
    );
    let judged = judgements(cmp, Source::Measured);
    for w in 0..cmp.workloads.len() {
        let _ = writeln!(
            out,
            "- {}",
            verdict_sentence_with(cmp, w, Source::Measured, &judged, None)
        );
    }
    if let Some(rest) = rest_command(cmp, &judged) {
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
            judged.comparisons,
            (1.0 - sequential::alpha(m)) * 100.0,
            judged.confidence * 100.0,
            rest_size_sentence(cmp, &rest)
        );
    }
    let why = faster_than_baseline(cmp, &judged);
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
    let _ = writeln!(
        out,
        "\n{} {}\n\n![measured ratios]({})\n",
        method_line(&judged, &base),
        measured_scope(cmp),
        png_name(&files.ratios)
    );
    if let Some((shipped, variants)) = model_variants(cmp) {
        let source = Source::Modelled(&shipped.id);
        let _ = writeln!(
            out,
            "### Modelled on the drive: {} (`{}`)\n",
            md(&shipped.name),
            md(&shipped.id)
        );
        if let Some(sizes) = block_sizes(cmp) {
            let _ = writeln!(
                out,
                "What needs no model: each target's Cannyls block size ({sizes}), and\n"
            );
        }
        out.push_str(&reopen_table(cmp, &shipped.id));
        let others: Vec<String> = variants[1..]
            .iter()
            .map(|p| format!("`{}`", md(&p.id)))
            .collect();
        let _ = writeln!(
            out,
            "The same runs' block requests replayed through the drive model of \
             docs/HDD-MODEL.md under its shipped rules (`{}`){}:\n",
            md(&shipped.id),
            if others.is_empty() {
                String::new()
            } else {
                format!(
                    ", with the lowest and highest ratio across its rule sets (`{}` and {})",
                    md(&shipped.id),
                    others.join(", ")
                )
            }
        );
        let judged = judgements(cmp, source);
        let variants_opt = (variants.len() > 1).then_some(&variants[..]);
        for w in 0..cmp.workloads.len() {
            let _ = writeln!(
                out,
                "- {}",
                verdict_sentence_with(cmp, w, source, &judged, variants_opt)
            );
        }
        let scope = if cmp
            .meta
            .device
            .as_deref()
            .unwrap_or("")
            .contains("hddsim emulate")
        {
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
        let _ = writeln!(out, "\n{} {scope}\n", method_line(&judged, &base));
        if let Some(file) = &files.modelled {
            let _ = writeln!(out, "![modelled ratios]({})\n", png_name(file));
        }
    }
    out.push_str(&super::split::section(cmp));
    out
}

/// What the measured tables are, what the modelled ones are, and why they may disagree,
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
            .map(|p| format!("\"Modelled on {}\"", md(&profile_title(p))))
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

fn summary_table(out: &mut String, cmp: &Comparison, source: Source<'_>) {
    let ratios = ratio_matrix(cmp, source);
    let judged = judgements(cmp, source);
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
            if let Some(j) = judged.cells[w][t] {
                text.push_str(j.judgement.mark());
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
            "\nRatio of medians. ▲ slower, ▼ faster than {base} (the interval of the ratio lies \
             above or below 1), = within ±5 % of {base}, ~ no difference found; no mark: fewer \
             than 2 rounds to judge by (the Summary gives the intervals and the method)."
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
    out.push_str(&measured_vs_modelled(cmp));
    out.push_str("\n\n");
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

/// Flushes, pre-flushed writes and FUA writes together (`None` when the run has none of the
/// three figures).
fn flush_total(d: &DriveWork) -> Option<u64> {
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

fn modelled_section(out: &mut String, cmp: &Comparison, p: &Profile, plot: Option<&str>) {
    let source = Source::Modelled(&p.id);
    let (base, _) = baseline_words(cmp);
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
    summary_table(out, cmp, source);
    if let Some(plot) = plot {
        let _ = writeln!(
            out,
            "The modelled ratios of the shipped rule set, with the range across the rule \
             sets: [{plot}]({plot})\n"
        );
    }
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
            "Ratios by workload, with their intervals: [{0}]({0}) (and [PNG]({1}))\n",
            files.ratios,
            png_name(&files.ratios)
        );
    }
    for w in 0..cmp.workloads.len() {
        measured_workload(&mut out, cmp, w, files.cdf[w].as_deref());
    }
    for p in &cmp.profiles {
        modelled_section(&mut out, cmp, p, files.modelled.as_deref());
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
