//! `minfs-bench report DIR`: a comparison directory (written by `scripts/compare.sh`)
//! rendered into `DIR/report.md` and SVG plots in `DIR/plots/`.
//!
//! ```no_run
//! let written = bencher_workloads::compare::render_dir(std::path::Path::new("results/cmp"))?;
//! println!("{}", written.report.display());
//! # Ok::<(), bencher_workloads::compare::CompareError>(())
//! ```
//!
//! - [`layout`]: reading the directory (`compare.json`, `runs/<workload>/<target>/run-<k>.*`);
//! - [`verdict`]: the one judgement of a report (per comparison its estimate, interval,
//!   verdict, drive states and projection), computed once and only rendered after;
//! - [`summary`]: the judged part of `report.md` (the first screen, the verdicts, the drive's
//!   states, the method);
//! - [`render`]: the tables (medians over runs per workload, measured and modelled) and
//!   `report.md` as a whole;
//! - [`split`]: a file system's gap to minfs split into Cannyls' block size's part and the
//!   file system's (`fs` against `fs@4096`);
//! - [`stats`]: the verdict's regions and the fixed-count method (ratios with simultaneous
//!   confidence intervals);
//! - [`sequential`]: the verdict of a run that stops each comparison once decided (an
//!   anytime-valid confidence sequence);
//! - [`states`]: the drive's state in each run, from the drive's own statistics;
//! - [`allocate`]: which undecided comparisons a budget run's next round runs (the nearest
//!   to a verdict first);
//! - [`plot`]: the plots (ratios with their intervals, measured and modelled; latency CDFs),
//!   each as SVG and PNG;
//! - [`format`]: number formatting.
//!
//! The baseline is the target `minfs`, else the first target. Rendering is deterministic:
//! the same directory gives the same files byte for byte (fixed order and number formats,
//! relative links, no time stamps).

pub mod allocate;
pub mod defaults;
pub mod format;
pub mod layout;
pub mod plot;
pub mod reference;
pub mod render;
pub mod sequential;
pub mod split;
pub mod states;
pub mod stats;
pub mod summary;
pub mod verdict;

use std::fs;
use std::path::{Path, PathBuf};

pub use layout::{load, Comparison};
pub use verdict::{decide, projections, Judged};

use crate::run::report::RunReport;
use layout::Cell;

/// Why a directory could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// `DIR/compare.json` does not exist.
    #[error(
        "{}: no such file; is the directory one written by scripts/compare.sh?",
        path.display()
    )]
    NotAComparison {
        /// The missing file.
        path: PathBuf,
    },
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A JSON file does not parse (or lacks a field a run report needs).
    #[error("{}: not a valid JSON report: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A line of an op-log is malformed.
    #[error("{}:{line}: not an op-log line: {message}", path.display())]
    OpLog {
        /// The file.
        path: PathBuf,
        /// The line (from 1).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A name in the directory cannot be used.
    #[error("{}: {message}", path.display())]
    Layout {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A plot could not be drawn.
    #[error("drawing {file}: {message}")]
    Plot {
        /// The plot's file name.
        file: String,
        /// plotters' error.
        message: String,
    },
}

/// Which reports of a cell the figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// The runs that succeeded (`run-<k>.json`).
    Measured,
    /// The modelled runs of a profile (`run-<k>.model-<profile>.json`).
    Modelled(&'a str),
}

impl Source<'_> {
    /// The reports of `cell`.
    pub fn reports<'c>(&self, cell: &'c Cell) -> Vec<&'c RunReport> {
        match self {
            Source::Measured => cell.ok(),
            Source::Modelled(p) => cell.modelled(p).into_iter().map(|m| &m.report).collect(),
        }
    }
}

/// The plots of a comparison, as paths relative to the directory (`plots/…`), SVGs; each has
/// a PNG of the same name next to it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotFiles {
    /// `plots/ratios.svg`: the measured ratios with their intervals.
    pub ratios: String,
    /// `plots/modelled.svg`: the modelled ratios (the shipped rule set, with the range across
    /// the rule sets), when there are modelled runs.
    pub modelled: Option<String>,
    /// Per workload, `plots/cdf-<workload>.svg`, or `None` when it has no op-log.
    pub cdf: Vec<Option<String>>,
}

/// `plots/x.svg` → `plots/x.png`.
pub fn png_name(svg: &str) -> String {
    format!("{}.png", svg.strip_suffix(".svg").unwrap_or(svg))
}

/// Names made file-safe ([`format::file_part`]), with `-2`, `-3`, … added where two would
/// be the same.
fn unique_parts(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let base = format::file_part(name);
        let mut part = base.clone();
        let mut n = 2;
        while out.contains(&part) {
            part = format!("{base}-{n}");
            n += 1;
        }
        out.push(part);
    }
    out
}

/// The plot files `cmp` gets.
pub fn plot_files(cmp: &Comparison) -> PlotFiles {
    let cdf = unique_parts(&cmp.workloads)
        .into_iter()
        .zip(&cmp.cells)
        .map(|(part, row)| {
            row.iter()
                .any(|c| !c.latencies.is_empty())
                .then(|| format!("plots/cdf-{part}.svg"))
        })
        .collect();
    PlotFiles {
        ratios: "plots/ratios.svg".to_string(),
        modelled: render::model_variants(cmp).map(|_| "plots/modelled.svg".to_string()),
        cdf,
    }
}

/// The files [`render_dir`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// `DIR/report.md`.
    pub report: PathBuf,
    /// The plots, in `DIR/plots/`.
    pub plots: Vec<PathBuf>,
}

/// All files of `cmp` as (path relative to the directory, contents): `report.md` first, then
/// each plot's SVG and PNG. `setup` is SETUP.md's text (the date, commit and wall time of the
/// first screen), if any. The comparisons are judged once ([`Judged`]) and every part renders
/// that judgement.
pub fn render(
    cmp: &Comparison,
    setup: Option<&str>,
) -> Result<Vec<(String, Vec<u8>)>, CompareError> {
    let files = plot_files(cmp);
    let judged = Judged::of(cmp);
    let facts = setup.map(summary::SetupFacts::parse).unwrap_or_default();
    let mut out = vec![(
        "report.md".to_string(),
        render::markdown(cmp, &judged, &facts).into_bytes(),
    )];
    let plot_err = |file: &str| {
        let file = file.to_string();
        move |message| CompareError::Plot { file, message }
    };
    let mut svgs: Vec<(String, String)> = Vec::new();
    if !cmp.targets.is_empty() && !cmp.workloads.is_empty() {
        let base = cmp.baseline().map_or("minfs", |b| cmp.targets[b].as_str());
        let names: Vec<Option<&str>> = cmp
            .targets
            .iter()
            .enumerate()
            .map(|(t, n)| (Some(t) != cmp.baseline()).then_some(n.as_str()))
            .collect();
        let measured = summary::ratio_dots(cmp, &judged, Source::Measured, None);
        let note = summary::interval_note(&judged, Source::Measured);
        let svg = plot::dots_svg(
            &format!("Total elapsed relative to {base}, measured"),
            &format!("total elapsed / {base}'s"),
            &cmp.workloads,
            &names,
            &measured,
            &[&format!("line at 1: {base}"), &note],
        )
        .map_err(plot_err(&files.ratios))?;
        svgs.push((files.ratios.clone(), svg));
        if let (Some(file), Some((shipped, variants))) =
            (&files.modelled, render::model_variants(cmp))
        {
            let source = Source::Modelled(&shipped.id);
            let dots = summary::ratio_dots(cmp, &judged, source, Some(&variants));
            let note = summary::interval_note(&judged, source);
            let band = format!("band: lowest–highest of {} rule sets", variants.len());
            let mut notes = vec![format!("line at 1: {base}"), note];
            if variants.len() > 1 {
                notes.push(band);
            }
            let notes: Vec<&str> = notes.iter().map(String::as_str).collect();
            let svg = plot::dots_svg(
                &format!("Modelled on {} ({})", shipped.name, shipped.id),
                &format!("modelled total elapsed / {base}'s"),
                &cmp.workloads,
                &names,
                &dots,
                &notes,
            )
            .map_err(plot_err(file))?;
            svgs.push((file.clone(), svg));
        }
        for (w, file) in files.cdf.iter().enumerate() {
            let Some(file) = file else { continue };
            let series: Vec<(usize, &str, &[u64])> = cmp
                .targets
                .iter()
                .enumerate()
                .map(|(t, name)| (t, name.as_str(), cmp.cells[w][t].latencies.as_slice()))
                .collect();
            let svg = plot::cdf_svg(&cmp.workloads[w], &series).map_err(plot_err(file))?;
            svgs.push((file.clone(), svg));
        }
    }
    for (file, svg) in svgs {
        let png = plot::png_of_svg(&svg).map_err(plot_err(&png_name(&file)))?;
        out.push((file.clone(), svg.into_bytes()));
        out.push((png_name(&file), png));
    }
    Ok(out)
}

/// Whether `name` is a plot file this renderer makes or made (`ratios`, `modelled`, `cdf-*`,
/// and the earlier `modelled-vs-measured-*`, as `.svg` or `.png`).
fn is_our_plot(name: &str) -> bool {
    let Some(stem) = name
        .strip_suffix(".svg")
        .or_else(|| name.strip_suffix(".png"))
    else {
        return false;
    };
    stem == "ratios"
        || stem == "modelled"
        || stem.starts_with("cdf-")
        || stem.starts_with("modelled-vs-measured-")
}

/// Reads the comparison in `dir` and writes `dir/report.md` and `dir/plots/*.{svg,png}`. Plots of
/// an earlier render that this one does not make (a workload or profile gone) are removed;
/// other files in `plots/` are left alone.
pub fn render_dir(dir: &Path) -> Result<Written, CompareError> {
    let cmp = load(dir)?;
    let setup = fs::read_to_string(dir.join("SETUP.md")).ok();
    let files = render(&cmp, setup.as_deref())?;
    let plots_dir = dir.join("plots");
    fs::create_dir_all(&plots_dir).map_err(|source| CompareError::Io {
        path: plots_dir.clone(),
        source,
    })?;
    let mut written = Written {
        report: dir.join("report.md"),
        plots: Vec::new(),
    };
    for (rel, contents) in &files {
        let path = dir.join(rel);
        fs::write(&path, contents).map_err(|source| CompareError::Io {
            path: path.clone(),
            source,
        })?;
        if rel != "report.md" {
            written.plots.push(path);
        }
    }
    let entries = fs::read_dir(&plots_dir).map_err(|source| CompareError::Io {
        path: plots_dir.clone(),
        source,
    })?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if is_our_plot(&name) && !written.plots.contains(&path) && path.is_file() {
            fs::remove_file(&path).map_err(|source| CompareError::Io {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_file_parts() {
        let names: Vec<String> = ["a b", "a_b", "c", "a_b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(unique_parts(&names), ["a_b", "a_b-2", "c", "a_b-3"]);
    }

    #[test]
    fn our_plots() {
        assert!(is_our_plot("ratios.svg"));
        assert!(is_our_plot("ratios.png"));
        assert!(is_our_plot("modelled.svg"));
        assert!(is_our_plot("cdf-seq-256k.png"));
        assert!(is_our_plot("modelled-vs-measured-st1000dm003.svg"));
        assert!(!is_our_plot("mine.svg"));
        assert!(!is_our_plot("cdf-notes.txt"));
        assert_eq!(png_name("plots/ratios.svg"), "plots/ratios.png");
    }
}
