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
        onednn = [t for t in (r["onednn_user_ms"], r["onednn_own_ms"]) if t]
        rows.setdefault((r["dir"], r["name"]), []).append(
            (r["ratio_best_onednn_over_convgrad"], r["convgrad_ms"], min(onednn), r["convgrad_kernel"]))
medians = collections.defaultdict(list)
for (direction, name), runs in rows.items():
    med = statistics.median(x[0] for x in runs)
    medians[direction].append(med)
    print(f"{direction} {name:16s} median {med:.3f}  runs {' '.join(f'{x[0]:.2f}' for x in runs)}  "
          f"convgrad {statistics.median(x[1] for x in runs):.3f} ms  oneDNN {statistics.median(x[2] for x in runs):.3f} ms  "
          f"{runs[0][3]}")
for direction, meds in medians.items():
    print(f"{direction} geomean {math.exp(sum(map(math.log, meds)) / len(meds)):.3f} lowest {min(meds):.2f}")
