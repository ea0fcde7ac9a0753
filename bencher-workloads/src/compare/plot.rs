//! The plots of `minfs-bench report`: SVGs drawn with plotters' SVG backend, and a PNG of
//! each made from the SVG ([`png_of_svg`]).
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

/// The x axis of the charts: `0..groups`, group `i` centred on `i + 0.5`, one tick per group
/// (labelled with the workload by the chart).
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

/// One target's figure on one workload: a ratio, its interval, and a range it lies in (the
/// lowest and highest across the drive model's rule sets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dot {
    /// The ratio.
    pub ratio: f64,
    /// Its confidence interval, if judged.
    pub interval: Option<(f64, f64)>,
    /// The range across variants, if there are several.
    pub range: Option<(f64, f64)>,
}

/// The marker of target `i`: a shape (circle, triangle, square, diamond, cross), filled for
/// the first five and hollow for the next five, in the target's colour.
fn marker<DB: DrawingBackend>(
    i: usize,
    (x, y): (i32, i32),
    r: i32,
) -> Vec<DynElement<'static, DB, (i32, i32)>> {
    let c = color(i);
    let filled = (i / 5) % 2 == 0;
    let style = if filled {
        c.filled()
    } else {
        c.stroke_width(2)
    };
    let shape = i % 5;
    let pts = |v: &[(i32, i32)]| {
        v.iter()
            .map(|&(dx, dy)| (x + dx, y + dy))
            .collect::<Vec<_>>()
    };
    let mut out: Vec<DynElement<'static, DB, (i32, i32)>> = Vec::new();
    match shape {
        0 => out.push(Circle::new((x, y), r, style).into_dyn()),
        1 => {
            let p = pts(&[(0, -r - 1), (r + 1, r), (-r - 1, r), (0, -r - 1)]);
            if filled {
                out.push(Polygon::new(p, style).into_dyn());
            } else {
                out.push(PathElement::new(p, style).into_dyn());
            }
        }
        2 => out.push(Rectangle::new([(x - r, y - r), (x + r, y + r)], style).into_dyn()),
        3 => {
            let p = pts(&[
                (0, -r - 1),
                (r + 1, 0),
                (0, r + 1),
                (-r - 1, 0),
                (0, -r - 1),
            ]);
            if filled {
                out.push(Polygon::new(p, style).into_dyn());
            } else {
                out.push(PathElement::new(p, style).into_dyn());
            }
        }
        _ => {
            let w = if filled { 3 } else { 2 };
            out.push(PathElement::new(pts(&[(-r, -r), (r, r)]), c.stroke_width(w)).into_dyn());
            out.push(PathElement::new(pts(&[(-r, r), (r, -r)]), c.stroke_width(w)).into_dyn());
        }
    }
    out
}

/// The y axis a set of ratios needs: logarithmic when the largest is more than 3 times the
/// smallest (one target 10× the rest would flatten the others), else linear; always holding
/// 1 (the baseline).
#[derive(Debug, Clone, PartialEq)]
pub struct YAxis {
    /// Logarithmic.
    pub log: bool,
    /// From.
    pub lo: f64,
    /// To.
    pub hi: f64,
    /// The ticks.
    pub ticks: Vec<f64>,
}

/// The axis for `values` (ratios and interval ends).
pub fn y_axis(values: impl Iterator<Item = f64>) -> YAxis {
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi / lo > 3.0 {
        const STEPS: [f64; 3] = [1.0, 2.0, 5.0];
        let mut ticks = Vec::new();
        let mut decade = 10f64.powi(lo.log10().floor() as i32 - 1);
        'outer: loop {
            for s in STEPS {
                let t = s * decade;
                if t > hi * 2.0 {
                    break 'outer;
                }
                if t >= lo / 2.0 {
                    ticks.push(t);
                }
            }
            decade *= 10.0;
        }
        let lo = ticks
            .iter()
            .copied()
            .filter(|&t| t <= lo)
            .fold(lo / 1.3, f64::max);
        let hi = ticks
            .iter()
            .copied()
            .filter(|&t| t >= hi)
            .fold(hi * 1.3, f64::min);
        YAxis {
            log: true,
            lo,
            hi,
            ticks,
        }
    } else {
        let span = (hi - lo).max(0.1);
        let lo = (lo - span * 0.08).max(0.0);
        let hi = hi + span * 0.08;
        let raw = (hi - lo) / 8.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|&s| s >= raw)
            .unwrap_or(raw);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        YAxis {
            log: false,
            lo,
            hi,
            ticks: (first..=last).map(|k| k as f64 * step).collect(),
        }
    }
}

/// A tick of a ratio axis: `0.5`, `1`, `1.25`, `20`, with no trailing zeros.
fn tick_label(v: f64) -> String {
    let s = if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A ratio chart: per workload a group, per target (but the baseline) its ratio as a marker
/// with its interval as a bar (and, where given, the range across variants as a pale band),
/// a line at 1 (the baseline), the legend beside the chart. `dots[w][t]`; `targets[t]` is
/// `None` for the baseline (not drawn).
pub fn dots_svg(
    title: &str,
    y_desc: &str,
    workloads: &[String],
    targets: &[Option<&str>],
    dots: &[Vec<Option<Dot>>],
    notes: &[&str],
) -> Result<String, PlotError> {
    let drawn: Vec<(usize, &str)> = targets
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.map(|t| (i, t)))
        .collect();
    let per = drawn.len().max(1);
    let groups = workloads.len().max(1);
    let legend_w = 40
        + drawn
            .iter()
            .map(|(_, n)| n.chars().count())
            .chain(notes.iter().map(|n| n.chars().count() * 5 / 6))
            .max()
            .unwrap_or(10) as u32
            * 9;
    let chart_w = (140 + groups * (per * 26 + 40)).clamp(520, 3600) as u32;
    let width = chart_w + legend_w;
    let axis = y_axis(dots.iter().flatten().flatten().flat_map(|d| {
        [
            Some(d.ratio),
            d.interval.map(|i| i.0),
            d.interval.map(|i| i.1),
        ]
        .into_iter()
        .chain([d.range.map(|r| r.0), d.range.map(|r| r.1)])
        .flatten()
    }));
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(chart_w);
        let title_area = left.titled(title, ("sans-serif", 19)).map_err(err)?;
        let slot = 0.8 / per as f64;
        let xs = |w: usize, k: usize| w as f64 + 0.1 + slot * (k as f64 + 0.5);
        macro_rules! draw {
            ($chart:ident) => {{
                $chart
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
                    .y_labels(10)
                    .y_label_formatter(&|v| tick_label(*v))
                    .light_line_style(BLACK.mix(0.06))
                    .label_style(("sans-serif", 14))
                    .axis_desc_style(("sans-serif", 15))
                    .draw()
                    .map_err(err)?;
                $chart
                    .draw_series(LineSeries::new(
                        [(0.0, 1.0), (groups as f64, 1.0)],
                        BLACK.mix(0.7).stroke_width(1),
                    ))
                    .map_err(err)?;
                for (k, &(t, _)) in drawn.iter().enumerate() {
                    let c = color(t);
                    for (w, row) in dots.iter().enumerate() {
                        let Some(Some(d)) = row.get(t) else { continue };
                        let x = xs(w, k);
                        if let Some((a, b)) = d.range {
                            let h = slot * 0.32;
                            $chart
                                .draw_series(std::iter::once(Rectangle::new(
                                    [(x - h, a), (x + h, b)],
                                    c.mix(0.22).filled(),
                                )))
                                .map_err(err)?;
                        }
                        if let Some((a, b)) = d.interval {
                            $chart
                                .draw_series(std::iter::once(PathElement::new(
                                    vec![(x, a), (x, b)],
                                    c.stroke_width(2),
                                )))
                                .map_err(err)?;
                            let h = slot * 0.18;
                            for y in [a, b] {
                                $chart
                                    .draw_series(std::iter::once(PathElement::new(
                                        vec![(x - h, y), (x + h, y)],
                                        c.stroke_width(2),
                                    )))
                                    .map_err(err)?;
                            }
                        }
                        $chart
                            .draw_series(std::iter::once(EmptyElement::at((x, d.ratio))))
                            .map_err(err)?;
                        let at = $chart.backend_coord(&(x, d.ratio));
                        for e in marker::<SVGBackend>(t, at, 5) {
                            root.draw(&e).map_err(err)?;
                        }
                    }
                }
            }};
        }
        let area = title_area.margin(8, 8, 8, 8);
        if axis.log {
            let mut chart = ChartBuilder::on(&area)
                .x_label_area_size(44)
                .y_label_area_size(60)
                .build_cartesian_2d(
                    GroupAxis(groups),
                    (axis.lo..axis.hi)
                        .log_scale()
                        .with_key_points(axis.ticks.clone()),
                )
                .map_err(err)?;
            draw!(chart);
        } else {
            let mut chart = ChartBuilder::on(&area)
                .x_label_area_size(44)
                .y_label_area_size(60)
                .build_cartesian_2d(GroupAxis(groups), axis.lo..axis.hi)
                .map_err(err)?;
            draw!(chart);
        }
        // The legend, beside the chart.
        let text = TextStyle::from(("sans-serif", 14).into_font()).color(&BLACK);
        let mut y = 60;
        for &(t, name) in &drawn {
            for e in marker::<SVGBackend>(t, (14, y), 5) {
                right.draw(&e).map_err(err)?;
            }
            right
                .draw(&Text::new(
                    name.to_string(),
                    (28, y),
                    text.clone().pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(err)?;
            y += 22;
        }
        y += 10;
        let grey = BLACK.mix(0.8);
        let small = TextStyle::from(("sans-serif", 12).into_font()).color(&grey);
        for note in notes {
            right
                .draw(&Text::new(
                    note.to_string(),
                    (6, y),
                    small.clone().pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(err)?;
            y += 18;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// `svg` as a PNG: rasterised with resvg, text in the system's sans-serif font (loaded once).
/// Where no font is installed the text is left out; the SVG has it.
pub fn png_of_svg(svg: &str) -> Result<Vec<u8>, PlotError> {
    use std::sync::{Arc, OnceLock};
    static FONTS: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family("DejaVu Sans");
        Arc::new(db)
    });
    let opt = resvg::usvg::Options {
        fontdb: fonts.clone(),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(svg, &opt).map_err(err)?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| format!("cannot make a {}×{} image", size.width(), size.height()))?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(err)
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
        let t = [None, Some("ext4"), Some("xfs")];
        let dot = |r: f64| {
            Some(Dot {
                ratio: r,
                interval: Some((r * 0.9, r * 1.1)),
                range: None,
            })
        };
        let d = vec![vec![None, dot(1.5), dot(0.9)], vec![None, dot(13.0), None]];
        let svg = dots_svg("x", "y", &w, &t, &d, &["note"]).unwrap();
        assert_eq!(svg, dots_svg("x", "y", &w, &t, &d, &["note"]).unwrap());
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains(">\next4\n</text>") && svg.contains(">\nnote\n</text>"),
            "{svg}"
        );
        // The log axis (13 is more than 3 times 0.81): ticks 1 and 10.
        assert!(
            svg.contains(">\n10\n</text>") && svg.contains(">\n1\n</text>"),
            "{svg}"
        );
        let png = png_of_svg(&svg).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn ticks_have_no_trailing_zeros() {
        let t: Vec<String> = [0.5, 1.0, 1.25, 2.0, 20.0, 500.0].map(tick_label).to_vec();
        assert_eq!(t, ["0.5", "1", "1.25", "2", "20", "500"]);
    }

    #[test]
    fn the_y_axis_fits_the_data() {
        // Near 1: linear, holding 1 and the interval ends.
        let a = y_axis([0.93, 1.07, 1.2].into_iter());
        assert!(!a.log && a.lo <= 0.93 && a.hi >= 1.2, "{a:?}");
        assert!(a.ticks.windows(2).all(|w| w[0] < w[1]) && a.ticks.len() >= 4);
        // One target 13× the rest: logarithmic, 1 and 13 on it.
        let b = y_axis([0.95, 1.1, 13.5].into_iter());
        assert!(b.log && b.lo <= 0.95 && b.hi >= 13.5, "{b:?}");
        assert!(b.ticks.contains(&1.0) && b.ticks.contains(&10.0), "{b:?}");
        // Nothing but the baseline.
        let c = y_axis(std::iter::empty());
        assert!(!c.log && c.lo < 1.0 && c.hi > 1.0);
    }

    #[test]
    fn markers_differ_by_shape_and_fill() {
        let kinds: Vec<String> = (0..10)
            .map(|i| {
                let mut svg = String::new();
                {
                    let root = SVGBackend::with_string(&mut svg, (40, 40)).into_drawing_area();
                    for e in marker::<SVGBackend>(i, (20, 20), 5) {
                        root.draw(&e).unwrap();
                    }
                    root.present().unwrap();
                }
                // The shape and its fill, without the colour.
                let c = color(i);
                svg.replace(&format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2), "C")
            })
            .collect();
        for i in 0..10 {
            for j in 0..i {
                assert_ne!(
                    kinds[i], kinds[j],
                    "targets {j} and {i} look alike but for colour"
                );
            }
        }
    }
}
