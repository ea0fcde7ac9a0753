//! docs/HDD-MODEL.md's validation tables hold what `hddsim validate --profile st1000dm003`
//! prints: the same figures, in the same order, to the printed precision.

use std::path::Path;

/// docs/HDD-MODEL.md's text.
fn hdd_model_doc() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/HDD-MODEL.md"))
        .unwrap()
}

#[test]
fn the_documented_validation_figures_are_the_models() {
    let doc = hdd_model_doc();
    let section = &doc[doc.find("## Validation: `hddsim validate`").unwrap()..];
    let rows: Vec<Vec<String>> = section
        .lines()
        .skip_while(|l| !l.starts_with("| figure |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    let p = hddsim::profile::load("st1000dm003").unwrap();
    let checks = hddsim::validate::run(&p);
    assert_eq!(rows.len(), checks.len(), "rows in the doc vs checks");
    let opt = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.1}"));
    for (row, c) in rows.iter().zip(&checks) {
        // | figure | model | manual | sister | unit |
        assert_eq!(
            row[2],
            format!("{:.1}", c.model),
            "model figure of `{}`",
            c.figure
        );
        assert_eq!(row[3], opt(c.manual), "manual figure of `{}`", c.figure);
        assert_eq!(row[4], opt(c.sister), "sister figure of `{}`", c.figure);
        assert_eq!(row[5], c.unit, "unit of `{}`", c.figure);
    }
}

/// A markdown table's rows after the line starting with `header`: the header's cells and
/// the rows' cells.
fn table(section: &str, header: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = section.lines().skip_while(|l| !l.starts_with(header));
    let cells = |l: &str| -> Vec<String> {
        l.trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let head = cells(lines.next().unwrap());
    let rows = lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect();
    (head, rows)
}

#[test]
fn the_documented_rule_streams_are_the_models() {
    let doc = hdd_model_doc();
    let section = &doc[doc.find("### Rule streams").unwrap()..];
    let p = hddsim::profile::load("st1000dm003").unwrap();
    let r = hddsim::validate::rule_streams(&p);
    // The legend: "- [i] variant", one per column.
    let legend: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- ["))
        .map_while(|l| l.split_once("] ").map(|(_, v)| v))
        .collect();
    assert_eq!(legend, r.variants, "variants");
    let (head, rows) = table(section, "| stream |");
    let numbers: Vec<String> = (1..=r.variants.len()).map(|i| format!("[{i}]")).collect();
    assert_eq!(head[1..], numbers[..], "columns");
    assert_eq!(rows.len(), r.streams.len(), "rows in the doc vs streams");
    for (row, s) in rows.iter().zip(&r.streams) {
        assert_eq!(row[0], s.stream);
        let want: Vec<String> = s.mb_per_s.iter().map(|v| format!("{v:.1}")).collect();
        assert_eq!(row[1..], want[..], "figures of `{}`", s.stream);
    }
    let (head, rows) = table(section, "| pattern |");
    assert_eq!(head[1..=numbers.len()], numbers[..], "pattern columns");
    assert_eq!(rows.len(), r.patterns.len(), "rows in the doc vs patterns");
    for (row, s) in rows.iter().zip(&r.patterns) {
        assert_eq!(row[0], s.pattern);
        let want: Vec<String> = s.ratio.iter().map(|v| format!("{v:.2}")).collect();
        assert_eq!(row[1..=want.len()], want[..], "ratios of `{}`", s.pattern);
        let published = s.published.map_or_else(
            || "–".to_string(),
            |p| format!("{:.2}–{:.2}", p.low, p.high),
        );
        assert_eq!(
            row[want.len() + 1],
            published,
            "published ratio of `{}`",
            s.pattern
        );
    }
}
