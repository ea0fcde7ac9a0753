//! Fixed number formatting for the report: times with three significant digits, ratios with
//! two decimals, and Markdown escaping. Everything here is a pure function of its input, so a
//! report rendered twice is the same byte for byte.

/// The median of `values` (the mean of the two middle ones for an even count); `None` when
/// empty. NaN sorts last and is never produced from the reports' integers.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The median of integers (see [`median`]).
pub fn median_u64(values: &[u64]) -> Option<f64> {
    median(&values.iter().map(|&v| v as f64).collect::<Vec<_>>())
}

/// `v` with three significant digits: `1.23`, `12.3`, `123`, `1234` (no more than three
/// decimals are shown: values of 1000 and up are whole numbers).
fn three_digits(v: f64) -> String {
    let decimals = |v: f64| {
        if v < 10.0 {
            2
        } else if v < 100.0 {
            1
        } else {
            0
        }
    };
    let d = decimals(v);
    let s = format!("{v:.d$}");
    // 9.996 rounds to "10.00": format the rounded value again with its own precision.
    let rounded: f64 = s.parse().unwrap_or(v);
    if decimals(rounded) != d {
        format!("{rounded:.prec$}", prec = decimals(rounded))
    } else {
        s
    }
}

/// A time in nanoseconds for people, three significant digits and a unit: `850 ns`,
/// `25.3 µs`, `1.23 ms`, `12.3 s`, `1234 s`; `—` for a value that is not finite.
pub fn time(ns: f64) -> String {
    if !ns.is_finite() || ns < 0.0 {
        return "—".to_string();
    }
    if ns.round() < 1000.0 {
        return format!("{} ns", ns.round());
    }
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    for (i, (scale, unit)) in UNITS.iter().enumerate() {
        let s = three_digits(ns / scale);
        let last = i + 1 == UNITS.len();
        // 999.7 µs would print as "1000 µs": say "1.00 ms" instead.
        if last || s.parse::<f64>().unwrap_or(0.0) < 1000.0 {
            return format!("{s} {unit}");
        }
    }
    unreachable!("the last unit always returns")
}

/// A time, or `—` when there is none.
pub fn opt_time(ns: Option<f64>) -> String {
    ns.map_or_else(|| "—".to_string(), time)
}

/// A ratio with two decimals, or `—`.
pub fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r.is_finite() => format!("{r:.2}"),
        _ => "—".to_string(),
    }
}

/// An interval's ends rounded outward (the low end down, the high end up) with the fewest
/// decimals, at least 2 and at most 6, at which `same(rounded low, rounded high)` still holds
/// (the printed interval gives the verdict the exact one gives), and the estimate `ratio` at
/// those decimals: (ratio, low, high). An infinite high end prints as `∞`.
pub fn outward(ratio: f64, low: f64, high: f64, same: impl Fn(f64, f64) -> bool) -> [String; 3] {
    let mut decimals = 2;
    while decimals < 6 {
        let scale = 10f64.powi(decimals as i32);
        let (lo, hi) = ((low * scale).floor() / scale, (high * scale).ceil() / scale);
        if same(lo, hi) {
            break;
        }
        decimals += 1;
    }
    let scale = 10f64.powi(decimals as i32);
    let end = |v: f64, up: bool| {
        if !v.is_finite() {
            return "∞".to_string();
        }
        let r = if up {
            (v * scale).ceil()
        } else {
            (v * scale).floor()
        } / scale;
        format!("{r:.decimals$}")
    };
    [
        format!("{ratio:.decimals$}"),
        end(low, false),
        end(high, true),
    ]
}

/// Bytes per second as MB/s (10^6 bytes) with one decimal, or `—`.
pub fn mb_per_sec(bytes_per_sec: Option<f64>) -> String {
    match bytes_per_sec {
        Some(b) if b.is_finite() => format!("{:.1}", b / 1e6),
        _ => "—".to_string(),
    }
}

/// A whole number with thousands separators: 33553918 → `33,553,918`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count (a median of counts may end in .5).
pub fn count(c: f64) -> String {
    if c.fract() == 0.0 {
        format!("{c:.0}")
    } else {
        format!("{c:.1}")
    }
}

/// `s` safe inside Markdown text and table cells: characters that would end a cell, start a
/// link, code, emphasis or HTML are backslash-escaped; line breaks become spaces.
pub fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '|' | '`' | '*' | '[' | ']' | '<' | '>' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `name` as a file name part: ASCII letters, digits, `.`, `_` and `-` kept, anything else
/// `_` (the names are directory names already; this only guards the plot paths).
pub fn file_part(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        "_".to_string()
    } else {
        s
    }
}

/// A relative path for a Markdown link: the parts joined by `/`, each percent-encoded where
/// it is not a plain file-name character.
pub fn link_path(parts: &[&str]) -> String {
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push('/');
        }
        for b in p.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(33553918), "33,553,918");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median_u64(&[10, 12]), Some(11.0));
    }

    #[test]
    fn times() {
        assert_eq!(time(0.0), "0 ns");
        assert_eq!(time(850.0), "850 ns");
        assert_eq!(time(999.4), "999 ns");
        assert_eq!(time(999.6), "1.00 µs");
        assert_eq!(time(25_349.0), "25.3 µs");
        assert_eq!(time(1_234_567.0), "1.23 ms");
        assert_eq!(time(850e6), "850 ms");
        assert_eq!(time(999.7e6), "1.00 s");
        assert_eq!(time(9.996e9), "10.0 s");
        assert_eq!(time(12.34e9), "12.3 s");
        assert_eq!(time(1234.4e9), "1234 s");
        assert_eq!(time(f64::NAN), "—");
        assert_eq!(opt_time(None), "—");
    }

    #[test]
    fn intervals_round_outward_with_the_digits_the_verdict_needs() {
        let slower = |l: f64, h: f64| l > 1.05 && h > l;
        // 1.0503 is above 1.05: two or three decimals (1.05, 1.050) would not show it.
        assert_eq!(
            outward(1.1, 1.0503, 1.17, slower),
            ["1.1000", "1.0503", "1.1700"]
        );
        // Plain cases keep two decimals, the ends rounded away from the estimate.
        assert_eq!(
            outward(1.234, 1.2011, 1.2611, slower),
            ["1.23", "1.20", "1.27"]
        );
        // An upper end of 0.9998 is printed as 0.9998 where "below 1" must show.
        let below_one = |_: f64, h: f64| h < 1.0;
        assert_eq!(
            outward(0.96, 0.9512, 0.9998, below_one),
            ["0.9600", "0.9512", "0.9998"]
        );
        assert_eq!(
            outward(1.0, 0.5, f64::INFINITY, |_, _| true),
            ["1.00", "0.50", "∞"]
        );
    }

    #[test]
    fn others() {
        assert_eq!(ratio(Some(18.0 / 11.0)), "1.64");
        assert_eq!(ratio(None), "—");
        assert_eq!(mb_per_sec(Some(218_456_000.0)), "218.5");
        assert_eq!(count(3.0), "3");
        assert_eq!(count(2.5), "2.5");
        assert_eq!(md("a|b_c`d\ne"), "a\\|b_c\\`d e");
        assert_eq!(file_part("seq 256k/x"), "seq_256k_x");
        assert_eq!(file_part(".."), "_");
        assert_eq!(
            link_path(&["runs", "a b", "run-1.error"]),
            "runs/a%20b/run-1.error"
        );
    }
}
