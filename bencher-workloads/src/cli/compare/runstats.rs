//! What the emulated drive did in one run: the difference of its `stats.json` before and after
//! (`runs/W/T/run-K.emulator.json`).

use std::path::Path;

/// A JSON file's value, `None` when it cannot be read or parsed.
pub fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// What the emulated drive did between two snapshots of its `stats.json` (`run-K.emulator.json`):
/// the differences of `drive` (what the modelled drive did: cache hits, media reads, waits
/// for cache room, …), `requests` (what it was asked), the late replies and the reply path's
/// counts (its per-class figures as they stood at the end), and the arrivals' sources as they
/// stood at the end.
pub fn emulator_run_stats(
    before: &serde_json::Value,
    after: &serde_json::Value,
) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for key in ["drive", "requests", "late_replies", "late_ns", "reply_path"] {
        if let Some(a) = after.get(key) {
            let d = match before.get(key) {
                Some(b) => json_delta(b, a),
                None => a.clone(),
            };
            out.insert(key.to_string(), d);
        }
    }
    for key in ["arrivals", "profile"] {
        if let Some(a) = after.get(key) {
            out.insert(key.to_string(), a.clone());
        }
    }
    serde_json::Value::Object(out)
}

/// `after − before`, number by number through objects (a key missing before counts as 0);
/// anything else is `after`'s.
fn json_delta(before: &serde_json::Value, after: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => Value::Object(
            a.iter()
                .map(|(k, av)| {
                    let d = match b.get(k) {
                        Some(bv) => json_delta(bv, av),
                        None => json_delta(&Value::Null, av),
                    };
                    (k.clone(), d)
                })
                .collect(),
        ),
        (b, Value::Number(a)) => {
            if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64().or(b.is_null().then_some(0))) {
                Value::from(a.saturating_sub(b))
            } else if let (Some(a), Some(b)) =
                (a.as_f64(), b.as_f64().or(b.is_null().then_some(0.0)))
            {
                Value::from(a - b)
            } else {
                Value::Number(a.clone())
            }
        }
        (_, a) => a.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_runs_statistics_are_the_difference_of_the_snapshots() {
        let before = json!({
            "drive": {"cache_read_hits": 10, "read_seek_ns": 5},
            "requests": {"reads": 3, "read_sizes": {"4096": 3}},
            "late_replies": 1, "late_ns": 100, "profile": "p",
            "reply_path": {"measured": 5, "late": 1, "late_ns": 700000, "classes": []}
        });
        let after = json!({
            "drive": {"cache_read_hits": 14, "read_seek_ns": 25, "media_reads": 2},
            "requests": {"reads": 5, "read_sizes": {"4096": 4, "8192": 1}},
            "late_replies": 1, "late_ns": 100, "profile": "p", "size_bytes": 1,
            "reply_path": {"measured": 9, "late": 1, "late_ns": 900000,
                           "classes": [{"class": "flush", "measured": 4}]}
        });
        let d = emulator_run_stats(&before, &after);
        assert_eq!(d["drive"]["cache_read_hits"], 4);
        assert_eq!(d["drive"]["read_seek_ns"], 20);
        assert_eq!(
            d["drive"]["media_reads"], 2,
            "a field new since before counts whole"
        );
        assert_eq!(d["requests"]["read_sizes"]["4096"], 1);
        assert_eq!(d["requests"]["read_sizes"]["8192"], 1);
        assert_eq!(d["late_replies"], 0);
        assert_eq!(d["reply_path"]["measured"], 4);
        assert_eq!(d["reply_path"]["late_ns"], 200000);
        assert_eq!(
            d["reply_path"]["classes"][0]["measured"], 4,
            "as it stood at the end"
        );
        assert!(d.get("size_bytes").is_none(), "only the run's figures");
    }
}
