//! The SVG plots of `minfs-bench report`, drawn with plotters' SVG backend.
//!
//! No font is loaded: plotters is built without its font features, so it sizes label areas
//! with its built-in estimate and writes text as SVG `<text>` elements that the viewer draws
//! in its own sans-serif font. The output depends on the figures alone (integer pixel
//! coordinates, fixed colours and sizes), so a plot drawn twice is the same byte for byte.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::format;

/// Tableau 10: the colour of target i is `PALETTE[i % 10]`, the same in every plot.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of target `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Why a plot could not be drawn (plotters' error, as text).
pub type PlotError = String;

fn err<E: std::fmt::Display>(e: E) -> PlotError {
    e.to_string()
}

/// The most points drawn per CDF curve (the sorted times are sampled evenly).
pub const CDF_POINTS: usize = 2000;

/// The points of the CDF of the sorted `times`: (time, fraction of operations at most that
/// long), at most [`CDF_POINTS`] of them, the first and the last included. A time of 0 is
/// drawn at 1 ns (the axis is logarithmic).
pub fn cdf_points(sorted: &[u64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let point = |i: usize| (sorted[i].max(1) as f64, (i + 1) as f64 / n as f64);
    if n <= CDF_POINTS {
        return (0..n).map(point).collect();
    }
    (0..CDF_POINTS)
        .map(|j| point(((j as u128 * (n - 1) as u128) / (CDF_POINTS - 1) as u128) as usize))
        .collect()
}

/// The powers of ten from the one at or below `lo` to the one at or above `hi` (at least two).
fn decades(lo: u64, hi: u64) -> Vec<f64> {
    let mut p = 1u64;
    while p.saturating_mul(10) <= lo.max(1) {
        p *= 10;
    }
    let mut out = vec![p as f64];
    while p < hi || out.len() < 2 {
        p = p.saturating_mul(10);
        out.push(p as f64);
        if p == u64::MAX {
            break;
        }
    }
    out
}

/// A tick of the log axis: `1 ns`, `10 µs`, `100 ms`, `1 s`, `10 s`.
fn decade_label(ns: f64) -> String {
    format::time(ns).replace(".00 ", " ").replace(".0 ", " ")
}

/// The latency CDF of one workload: one curve per target that has times. `series` holds
/// (target index for the colour, name, sorted times).
pub fn cdf_svg(workload: &str, series: &[(usize, &str, &[u64])]) -> Result<String, PlotError> {
    let present: Vec<&(usize, &str, &[u64])> =
        series.iter().filter(|(_, _, t)| !t.is_empty()).collect();
    let lo = present.iter().map(|s| s.2[0]).min().unwrap_or(1);
    let hi = present
        .iter()
        .map(|s| s.2[s.2.len() - 1])
        .max()
        .unwrap_or(10);
    let keys = decades(lo, hi);
    let (x0, x1) = (keys[0], keys[keys.len() - 1]);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (960, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{workload}: latency CDF of all operations (all runs pooled)"),
                ("sans-serif", 20),
            )
            .margin(16)
            .margin_right(40)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale().with_key_points(keys), 0f64..1f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("latency (end − start), log scale")
            .y_desc("fraction of operations")
            .x_label_formatter(&|v| decade_label(*v))
            .y_labels(11)
            .y_label_formatter(&|v| format!("{v:.1}"))
            .max_light_lines(0)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        for &&(i, name, times) in &present {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(cdf_points(times), c.stroke_width(2)))
                .map_err(err)?
                .label(format!("{name} ({} ops)", times.len()))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .label_font(("sans-serif", 15))
            // plotters' text estimate is a little short of a real sans-serif's width.
            .margin(16)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// The x axis of the bar charts: `0..groups`, group `i` centred on `i + 0.5`, one tick per
/// group (labelled with the workload by the chart).
struct GroupAxis(usize);

impl Ranged for GroupAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let frac = value / self.0.max(1) as f64;
        limit.0 + ((limit.1 - limit.0) as f64 * frac).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.0.max(1) as f64
    }
}

/// A chart width that leaves about `px` pixels per bar and room for the title.
fn bars_width(groups: usize, bars_per_group: usize, px: usize, title: &str) -> u32 {
    let bars = 160 + groups * (bars_per_group * px + 30);
    let title = 60 + title.chars().count() * 19 / 2;
    bars.max(title).clamp(720, 4000) as u32
}

/// The top of the y axis: room above the tallest bar for its label and the legend.
fn y_top(values: impl Iterator<Item = f64>, legend_rows: usize) -> f64 {
    let max = values.filter(|v| v.is_finite()).fold(1.0f64, f64::max);
    max * (1.2 + 0.08 * legend_rows as f64)
}

/// The axes both ratio plots share: a group of bars per workload on x, the ratio on y up to
/// `top`, and a line at 1 (the baseline).
fn ratio_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    workloads: &[String],
    top: f64,
) -> Result<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<GroupAxis, plotters::coord::types::RangedCoordf64>,
    >,
    PlotError,
> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(16)
        .margin_right(40)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(GroupAxis(workloads.len()), 0f64..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("workload")
        .y_desc(y_desc)
        .x_label_formatter(&|v| {
            workloads
                .get(v.floor().max(0.0) as usize)
                .cloned()
                .unwrap_or_default()
        })
        .y_label_formatter(&|v| format!("{v:.1}"))
        .max_light_lines(0)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, 1.0), (workloads.len().max(1) as f64, 1.0)],
            BLACK.mix(0.6).stroke_width(1),
        ))
        .map_err(err)?;
    Ok(chart)
}

/// Grouped bars: per workload a group, per target a bar of its ratio, a line at 1 and each
/// bar's value above it.
pub fn ratios_svg(
    title: &str,
    y_desc: &str,
    workloads: &[String],
    targets: &[String],
    ratios: &[Vec<Option<f64>>],
) -> Result<String, PlotError> {
    let groups = workloads.len().max(1);
    let per = targets.len().max(1);
    let width = bars_width(groups, per, 34, title);
    let top = y_top(ratios.iter().flatten().flatten().copied(), targets.len());
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ratio_chart(&root, title, y_desc, workloads, top)?;
        let slot = 0.8 / per as f64;
        let label = TextStyle::from(("sans-serif", 12).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (t, name) in targets.iter().enumerate() {
            let c = color(t);
            let mut bars = Vec::new();
            let mut texts = Vec::new();
            for (w, row) in ratios.iter().enumerate() {
                if let Some(Some(r)) = row.get(t) {
                    let x = w as f64 + 0.1 + slot * t as f64;
                    bars.push(Rectangle::new(
                        [(x, 0.0), (x + slot * 0.92, *r)],
                        c.filled(),
                    ));
                    texts.push(Text::new(
                        format!("{r:.2}"),
                        (x + slot * 0.46, *r),
                        label.clone(),
                    ));
                }
            }
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
            chart.draw_series(texts).map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .label_font(("sans-serif", 15))
            // plotters' text estimate is a little short of a real sans-serif's width.
            .margin(16)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// Per workload and target, a pair of bars: the measured ratio (solid) and the modelled one
/// (pale, outlined).
pub fn modelled_vs_measured_svg(
    profile_name: &str,
    baseline: &str,
    workloads: &[String],
    targets: &[String],
    measured: &[Vec<Option<f64>>],
    modelled: &[Vec<Option<f64>>],
) -> Result<String, PlotError> {
    let groups = workloads.len().max(1);
    let per = targets.len().max(1);
    let title =
        format!("Ratio to {baseline}: measured (solid) vs modelled on {profile_name} (pale)");
    let width = bars_width(groups, per * 2, 16, &title);
    let all = measured.iter().chain(modelled).flatten().flatten().copied();
    let top = y_top(all, targets.len());
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let y_desc = format!("median total elapsed / {baseline}'s");
        let mut chart = ratio_chart(&root, &title, &y_desc, workloads, top)?;
        let slot = 0.8 / per as f64;
        let half = slot * 0.46;
        for (t, name) in targets.iter().enumerate() {
            let c = color(t);
            let mut bars = Vec::new();
            for w in 0..workloads.len() {
                let x = w as f64 + 0.1 + slot * t as f64;
                if let Some(Some(r)) = measured.get(w).and_then(|row| row.get(t)) {
                    bars.push(Rectangle::new([(x, 0.0), (x + half, *r)], c.filled()));
                }
                if let Some(Some(r)) = modelled.get(w).and_then(|row| row.get(t)) {
                    let x = x + half;
                    bars.push(Rectangle::new(
                        [(x, 0.0), (x + half, *r)],
                        c.mix(0.35).filled(),
                    ));
                    bars.push(Rectangle::new(
                        [(x, 0.0), (x + half, *r)],
                        c.stroke_width(1),
                    ));
                }
            }
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + Rectangle::new([(0, -6), (7, 6)], c.filled())
                        + Rectangle::new([(7, -6), (14, 6)], c.mix(0.35).filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .label_font(("sans-serif", 15))
            // plotters' text estimate is a little short of a real sans-serif's width.
            .margin(16)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_sampling() {
        assert!(cdf_points(&[]).is_empty());
        assert_eq!(cdf_points(&[0, 5]), [(1.0, 0.5), (5.0, 1.0)]);
        let many: Vec<u64> = (1..=10_000).collect();
        let p = cdf_points(&many);
        assert_eq!(p.len(), CDF_POINTS);
        assert_eq!(p[0], (1.0, 0.0001));
        assert_eq!(p[CDF_POINTS - 1], (10_000.0, 1.0));
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    }

    #[test]
    fn decade_keys() {
        let labels: Vec<String> = decades(1, 20_000_000_000)
            .into_iter()
            .map(decade_label)
            .collect();
        assert_eq!(
            labels,
            [
                "1 ns", "10 ns", "100 ns", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms",
                "1 s", "10 s", "100 s"
            ]
        );
        assert_eq!(decades(1, 1), [1.0, 10.0]);
        assert_eq!(decades(150, 2_000_000), [100.0, 1e3, 1e4, 1e5, 1e6, 1e7]);
        assert_eq!(decades(1000, 1000), [1000.0, 1e4]);
    }

    #[test]
    fn svgs_are_deterministic() {
        let a: Vec<u64> = (1..500).map(|i| i * 1000).collect();
        let b: Vec<u64> = (1..300).map(|i| i * 3000).collect();
        let s = [(0, "minfs", &a[..]), (1, "ext4 <&>", &b[..])];
        let one = cdf_svg("w", &s).unwrap();
        assert_eq!(one, cdf_svg("w", &s).unwrap());
        assert!(one.starts_with("<svg"), "{}", &one[..100]);
        // A curve and a legend line per target, in the target's colour.
        for c in ["#1F77B4", "#FF7F0E"] {
            let lines =
                format!("<polyline fill=\"none\" opacity=\"1\" stroke=\"{c}\" stroke-width=\"2\"");
            assert_eq!(one.matches(&lines).count(), 2, "{c}: {one}");
        }
        assert!(one.contains("ext4 &lt;&amp;&gt; (299 ops)"));
        let w = vec!["a".to_string(), "b".to_string()];
        let t = vec!["minfs".to_string(), "ext4".to_string()];
        let r = vec![vec![Some(1.0), Some(1.5)], vec![Some(1.0), None]];
        let bars = ratios_svg("x", "y", &w, &t, &r).unwrap();
        assert_eq!(bars, ratios_svg("x", "y", &w, &t, &r).unwrap());
        assert!(bars.contains(">\n1.50\n</text>"), "{bars}");
        let mm = modelled_vs_measured_svg("P", "minfs", &w, &t, &r, &r).unwrap();
        assert!(mm.starts_with("<svg") && mm.contains("modelled on P"));
    }
}
