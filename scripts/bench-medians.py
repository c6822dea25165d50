#!/usr/bin/env python3
"""Several `convgrad bench --json` runs of the same suite, summarised: per (direction,
problem) the median over the runs of best-oneDNN / convgrad (and the runs' ratios, convgrad's
and the better oneDNN's median ms, the kernel), then each direction's geomean of those
medians and its lowest row. This VM's timings move by up to +-30 % between runs, so
bench/RESULTS.md's standings are geomeans of row medians over alternated runs.

    scripts/bench-medians.py run1.json run2.json run3.json
"""
import collections
import json
import math
import statistics
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
rows = collections.OrderedDict()
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        # (No oneDNN time, and no ratio, where oneDNN has no such op: f64, GPU runs.)
        onednn = [t for t in (r["onednn_user_ms"], r["onednn_own_ms"]) if t]
        rows.setdefault((r["dir"], r["name"]), []).append(
            (r["ratio_best_onednn_over_convgrad"], r["convgrad_ms"], min(onednn) if onednn else None, r["convgrad_kernel"]))


def median_of(values, fmt):
    present = [v for v in values if v is not None]
    return (statistics.median(present), format(statistics.median(present), fmt)) if present else (None, "n/a")


medians = collections.defaultdict(list)
for (direction, name), runs in rows.items():
    med, med_text = median_of((x[0] for x in runs), ".3f")
    if med is not None:
        medians[direction].append(med)
    ratios = " ".join("n/a" if x[0] is None else f"{x[0]:.2f}" for x in runs)
    print(f"{direction} {name:16s} median {med_text}  runs {ratios}  "
          f"convgrad {median_of((x[1] for x in runs), '.3f')[1]} ms  oneDNN {median_of((x[2] for x in runs), '.3f')[1]} ms  "
          f"{runs[0][3]}")
for direction, meds in medians.items():
    print(f"{direction} geomean {math.exp(sum(map(math.log, meds)) / len(meds)):.3f} lowest {min(meds):.2f}")
