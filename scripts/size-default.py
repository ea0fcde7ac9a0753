#!/usr/bin/env python3
"""How many rounds a comparison needs to tell a 5 % difference, from a pilot run.

    scripts/size-default.py DIR... [--margin 0.05] [--comparisons M] [--residuals FILE]
                            [--budget-data FILE [--budget SECONDS]] [--rounds-data FILE]
                            [--targets LIST]

DIR is a comparison directory written by scripts/compare.sh with several rounds (--runs); with
several (e.g. one pilot per workload, each at its own scale) their comparisons are pooled. For
each workload and target but minfs, the per-round log-ratios d_k = ln(target / minfs, round k)
are taken from the measured runs; their standard deviation s is the comparison's noise. The
report's interval is exp(mean ± t·s/√n) with t Student's quantile at 1 − 0.05/(2M) (M the
report's comparisons, Bonferroni; bencher-workloads/src/compare/stats.rs). This prints, per
comparison, s and the rounds n that make t·s/√n ≤ ln(1 + margin), then the median and upper
quartile over the comparisons. With --residuals FILE it also writes the residuals (d_k minus
their mean, per comparison) as JSON: `{"residuals": [[...], ...]}`, the noise the verdict's
simulation test draws from. With --budget-data FILE it writes what the simulation of a budget
run needs, per workload: minfs's mean time per run and per target its mean time per run, its
mean log-ratio (`effect`, over all its rounds) and its residuals (pooled over the DIRs, each
DIR's about its own mean), and the workload's scale (DIRs that ran a workload at different
scales are refused), with the budget (the runs' own, or --budget SECONDS: what the
simulation spends) and the
time before round 1 — the times are those `compare.log` shows between one run's line and the
next (preparation, the run, its replays), so each DIR needs its compare.log. --targets LIST
(comma-separated, e.g. ext4,xfs: the default's) keeps only those targets' comparisons in the
files written; the figures printed cover every comparison of the DIRs.

Exit codes: 0; 1 DIR unreadable or with fewer than 2 rounds; 2 usage error.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys


def betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta (Numerical Recipes' betacf)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + aa / c if abs(c) > 1e-300 else 1e-300
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1.0 + aa / c if abs(c) > 1e-300 else 1e-300
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-14:
            break
    return h


def betai(a, b, x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    x = df / (df + t * t)
    tail = 0.5 * betai(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def rounds_needed(sd, half, confidence):
    for n in range(2, 10000):
        if t_quantile(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n) <= half:
            return n
    return 10000


GET_STATE_MS = 6.0


def run_state(dir, w, t, k):
    """The drive state of run k ('cache', 'media' or None) and where it came from."""
    base = os.path.join(dir, "runs", w, t)
    try:
        em = json.load(open(os.path.join(base, f"run-{k}.emulator.json")))
        d = em.get("drive", em)
        if "cache_read_hits" in d and "media_reads" in d:
            gets = 0
            try:
                r = json.load(open(os.path.join(base, f"run-{k}.json")))
                gets = sum(x["count"] for x in r.get("kinds", []) if x["kind"].startswith("Get("))
            except (OSError, ValueError, KeyError):
                pass
            if gets == 0:
                return None, "emulator"
            return ("cache" if d["cache_read_hits"] > d["media_reads"] else "media"), "emulator"
    except (OSError, ValueError):
        pass
    try:
        r = json.load(open(os.path.join(base, f"run-{k}.json")))
    except (OSError, ValueError):
        return None, None
    gets = [x for x in r.get("kinds", []) if x["kind"].startswith("Get(")]
    if not gets:
        return None, None
    p50 = gets[0]["percentiles_ns"]["50.0"] / 1e6
    return ("cache" if p50 < GET_STATE_MS else "media"), "median get"


def run_total(dir, w, t, k):
    """Run k's total elapsed (ns), or None where it has no report."""
    try:
        return json.load(open(os.path.join(dir, "runs", w, t, f"run-{k}.json")))["total_elapsed_ns"]
    except (OSError, ValueError, KeyError):
        return None


def paired_totals(dir, meta):
    """Per comparison (a workload and a target other than minfs), in the directory's order:
    (workload, target, [(round, target's total, minfs's total)] of the rounds both ran)."""
    runs = int(meta.get("runs", 0))
    for w in meta["workloads"]:
        for t in meta["targets"]:
            if t == "minfs":
                continue
            pairs = []
            for k in range(1, runs + 1):
                x, b = run_total(dir, w, t, k), run_total(dir, w, "minfs", k)
                if x and b:
                    pairs.append((k, x, b))
            yield w, t, pairs


def collect_rounds(dir, out, sources):
    """Per (workload, target), each round's [d, target state, minfs state] into out."""
    meta = json.load(open(os.path.join(dir, "compare.json")))
    for w, t, pairs in paired_totals(dir, meta):
        for k, x, b in pairs:
            st, s1 = run_state(dir, w, t, k)
            sb, s2 = run_state(dir, w, "minfs", k)
            sources.update(s for s in (s1, s2) if s)
            out.setdefault((w, t), []).append([round(math.log(x / b), 6), st, sb])


def collect(dir, rows, residuals, means=None):
    """The comparisons of one directory: (workload, target, sd, rounds) into rows, residuals
    (and, given `means`, each comparison's mean log-ratio into it)."""
    try:
        meta = json.load(open(os.path.join(dir, "compare.json")))
    except (OSError, ValueError) as e:
        print(f"size-default.py: error: {dir}: {e}", file=sys.stderr)
        sys.exit(1)
    for w, t, pairs in paired_totals(dir, meta):
        d = [math.log(x / b) for _, x, b in pairs]
        if len(d) < 2:
            continue
        m = statistics.mean(d)
        rows.append((w, t, statistics.stdev(d), len(d)))
        residuals.append([x - m for x in d])
        if means is not None:
            means.append((m, len(d)))


RUN_LINE = re.compile(r"\] (\S+) (\S+): .*\(elapsed (?:(\d+)h)?(?:(\d+)m)?(\d+)s")
WARM_UP = re.compile(r"warm-up run .*\(elapsed (?:(\d+)m)?(\d+)s")


def run_times(dir):
    """Per (workload, target), the wall time of each run as compare.log shows it (the elapsed
    time of its line less the previous line's), and the elapsed time before round 1."""
    times, prev, start = {}, None, 0
    try:
        lines = open(os.path.join(dir, "compare.log")).read().splitlines()
    except OSError as e:
        print(f"size-default.py: error: {dir}: {e}", file=sys.stderr)
        sys.exit(1)
    for line in lines:
        m = WARM_UP.search(line)
        if m:
            prev = start = int(m.group(1) or 0) * 60 + int(m.group(2))
            continue
        m = RUN_LINE.search(line)
        if m:
            e = int(m.group(3) or 0) * 3600 + int(m.group(4) or 0) * 60 + int(m.group(5))
            if prev is not None:
                times.setdefault((m.group(1), m.group(2)), []).append(e - prev)
            prev = e
    return times, start


def budget_data(dirs, rows, residuals, means, budget=None):
    """The budget simulation's data from the DIRs (see the module's note) and what `collect`
    gave for them."""
    times, starts, res, effects = {}, [], {}, {}
    workloads, targets, scales = [], [], {}
    for d in dirs:
        meta = json.load(open(os.path.join(d, "compare.json")))
        budget = budget or meta.get("budget_s")
        for w in meta["workloads"]:
            if w not in workloads:
                workloads.append(w)
            # Runs at different scales are different experiments: never pooled.
            scale = (meta.get("scales") or {}).get(w, meta.get("scale"))
            if scales.setdefault(w, scale) != scale:
                print(f"size-default.py: error: {d}: {w} at scale {scale}, "
                      f"another DIR at {scales[w]}: runs of different scales are not pooled",
                      file=sys.stderr)
                sys.exit(1)
        for t in meta["targets"]:
            if t not in targets:
                targets.append(t)
        t_d, start = run_times(d)
        starts.append(start)
        for k, v in t_d.items():
            times.setdefault(k, []).extend(v)
    for (w, t, _, _), x, m in zip(rows, residuals, means):
        res.setdefault((w, t), []).extend(x)
        effects.setdefault((w, t), []).append(m)
    out = []
    for w in workloads:
        if (w, "minfs") not in times:
            continue
        out.append({
            "name": w,
            "scale": scales[w],
            "baseline_s": round(statistics.mean(times[(w, "minfs")]), 3),
            "targets": [
                {"name": t, "cost_s": round(statistics.mean(times[(w, t)]), 3),
                 "effect": round(sum(m * n for m, n in effects[(w, t)])
                                 / sum(n for _, n in effects[(w, t)]), 6),
                 "residuals": [round(x, 6) for x in res[(w, t)]]}
                for t in targets if t != "minfs" and (w, t) in times and (w, t) in res
            ],
        })
    return {"budget_s": budget, "before_round_1_s": round(statistics.mean(starts), 3),
            "workloads": out}


def only(data, keep):
    """Keeps only the targets in `keep` (all when None) of each workload of `data`; an error
    naming the targets none of the DIRs ran."""
    if keep is None:
        return
    ran = {t["name"] for w in data["workloads"] for t in w["targets"]}
    if keep - ran:
        print(f"size-default.py: error: --targets: {','.join(sorted(keep - ran))} not in the DIRs "
              f"(they ran {','.join(sorted(ran))})", file=sys.stderr)
        sys.exit(2)
    for w in data["workloads"]:
        w["targets"] = [t for t in w["targets"] if t["name"] in keep]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="+")
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--comparisons", type=int, help="M (default: this directory's)")
    ap.add_argument("--residuals")
    ap.add_argument("--budget-data")
    ap.add_argument("--budget", type=float,
                    help="the budget to simulate, seconds (default: the runs' own)")
    ap.add_argument("--rounds-data")
    ap.add_argument("--targets", help="keep only these targets' comparisons in the files written")
    a = ap.parse_args()
    keep = set(a.targets.split(",")) if a.targets else None
    rows, residuals, means = [], [], []
    for d in a.dir:
        collect(d, rows, residuals, means)
    if not rows:
        print(f"size-default.py: error: {' '.join(a.dir)}: no comparison with 2 or more rounds", file=sys.stderr)
        sys.exit(1)
    m = a.comparisons or len(rows)
    conf = 1 - 0.05 / m
    half = math.log(1 + a.margin)
    print(f"{len(rows)} comparisons here; intervals at {conf:.5f} for M = {m}; margin {a.margin:.0%}")
    print("| workload | target | rounds | sd of log-ratio | rounds needed |")
    print("| --- | --- | ---: | ---: | ---: |")
    for w, t, sd, n in rows:
        print(f"| {w} | {t} | {n} | {sd:.3f} | {rounds_needed(sd, half, conf)} |")
    sds = sorted(r[2] for r in rows)
    med, q3 = statistics.median(sds), sds[(3 * len(sds)) // 4]
    print(f"\nmedian sd {med:.3f}: {rounds_needed(med, half, conf)} rounds; "
          f"upper quartile {q3:.3f}: {rounds_needed(q3, half, conf)} rounds")
    if a.budget_data:
        data = {"source": " ".join(os.path.relpath(d) for d in a.dir)}
        data.update(budget_data(a.dir, rows, residuals, means, a.budget))
        only(data, keep)
        with open(a.budget_data, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    if a.rounds_data:
        data = {"source": " ".join(os.path.relpath(d) for d in a.dir)}
        data.update(budget_data(a.dir, rows, residuals, means, a.budget))
        rounds, sources = {}, set()
        for d in a.dir:
            collect_rounds(d, rounds, sources)
        data["state_source"] = " and ".join(sorted(sources)) or None
        only(data, keep)
        for w in data["workloads"]:
            for t in w["targets"]:
                del t["residuals"]
                t["rounds"] = rounds[(w["name"], t["name"])]
        with open(a.rounds_data, "w") as f:
            json.dump(data, f, indent=None, separators=(",", ":"))
            f.write("\n")
    if a.residuals:
        json.dump({"source": " ".join(os.path.abspath(d) for d in a.dir), "residuals": residuals},
                  open(a.residuals, "w"), indent=0)


if __name__ == "__main__":
    main()
