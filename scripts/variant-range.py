#!/usr/bin/env python3
"""The comparison as a range across the drive model's rule sets.

    scripts/variant-range.py --shipped LABEL=DIR [--emulated LABEL=DIR]... \
        [--replayed [LABEL:]PROFILE]... [--targets T,...] [--workloads W,...]

DIR is a comparison directory written by scripts/compare.sh. For every workload and target the
ratio of its total elapsed to minfs's (median over runs) is taken:

- measured in the shipped rule set's emulated directory (--shipped) and in each other emulated
  directory (--emulated: the same comparison run on the drive emulated under another rule set);
- modelled, for each --replayed PROFILE (labelled LABEL where given; a profile may carry
  overrides, PROFILE+PARAM=VALUE), from the shipped directory's own block traces replayed
  under PROFILE (run-K.model-PROFILE.json, written by `minfs-bench hdd-replay` or
  scripts/remodel.sh): what those requests cost under other rules, with the host's timing as it
  was on the shipped drive.

It prints two Markdown tables: per workload and target the shipped figure with the lowest and
highest across all variants (each labelled), then every variant's figure. Exit codes: 0, 1 a
directory or file unreadable, 2 usage error.
"""

import argparse
import glob
import json
import os
import statistics
import sys


def fail(msg, code=1):
    print(f"variant-range.py: error: {msg}", file=sys.stderr)
    sys.exit(code)


def label_dir(spec, what):
    if "=" not in spec:
        fail(f"{what} '{spec}' is not LABEL=DIR", 2)
    label, d = spec.split("=", 1)
    if not os.path.isfile(os.path.join(d, "compare.json")):
        fail(f"{what} {d}: no compare.json (not a comparison directory)")
    return label, d


def totals(d, workload, target, profile=None):
    """Total elapsed (ns) of each run of workload/target in d: measured, or modelled."""
    pattern = "run-*.json" if profile is None else f"run-*.model-{profile}.json"
    out = []
    for f in sorted(glob.glob(os.path.join(d, "runs", workload, target, pattern))):
        base = os.path.basename(f)
        if profile is None and ".model-" in base:
            continue
        try:
            out.append(json.load(open(f))["total_elapsed_ns"])
        except (OSError, ValueError, KeyError) as e:
            fail(f"{f}: {e}")
    return out


def ratio(d, workload, target, profile=None):
    t = totals(d, workload, target, profile)
    b = totals(d, workload, "minfs", profile)
    if not t or not b or statistics.median(b) == 0:
        return None
    return statistics.median(t) / statistics.median(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shipped", required=True)
    ap.add_argument("--emulated", action="append", default=[])
    ap.add_argument("--replayed", action="append", default=[])
    ap.add_argument("--targets")
    ap.add_argument("--workloads")
    a = ap.parse_args()
    ship_label, ship_dir = label_dir(a.shipped, "--shipped")
    emulated = [label_dir(s, "--emulated") for s in a.emulated]
    meta = json.load(open(os.path.join(ship_dir, "compare.json")))
    workloads = a.workloads.split(",") if a.workloads else meta.get("workloads", [])
    targets = a.targets.split(",") if a.targets else [
        t for t in meta.get("targets", []) if t != "minfs"]
    replayed = []
    for spec in a.replayed:
        label, sep, p = spec.partition(":")
        if not sep:
            label, p = spec, spec
        replayed.append((label, p))
    # Columns: (label, how).
    columns = [(f"{ship_label} (emulated)", lambda w, t: ratio(ship_dir, w, t))]
    for label, d in emulated:
        columns.append((f"{label} (emulated)", lambda w, t, d=d: ratio(d, w, t)))
    for label, p in replayed:
        columns.append((f"{label} (replayed)", lambda w, t, p=p: ratio(ship_dir, w, t, p)))
    rows = []
    for w in workloads:
        for t in targets:
            figs = [(label, f(w, t)) for label, f in columns]
            if all(v is None for _, v in figs):
                continue
            rows.append((w, t, figs))
    fmt = lambda v: "—" if v is None else f"{v:.2f}"
    print("| Workload | Target | " + columns[0][0] + " | lowest | highest |")
    print("| --- | --- | ---: | --- | --- |")
    for w, t, figs in rows:
        have = [(l, v) for l, v in figs if v is not None]
        lo = min(have, key=lambda x: x[1])
        hi = max(have, key=lambda x: x[1])
        print(f"| {w} | {t} | {fmt(figs[0][1])} | {fmt(lo[1])} {lo[0]} | {fmt(hi[1])} {hi[0]} |")
    print()
    print("| Workload | Target | " + " | ".join(l for l, _ in columns) + " |")
    print("| --- | --- |" + " ---: |" * len(columns))
    for w, t, figs in rows:
        print(f"| {w} | {t} | " + " | ".join(fmt(v) for _, v in figs) + " |")


if __name__ == "__main__":
    main()
