#!/usr/bin/env python3
"""Kernel-alone A/B of two generator executables over a suite: for every problem and
direction, the kernel the registry picks (scripts/fixed-strings.sh: its variant and exact
`fixed` string) built from GEN_A and GEN_B and timed in one process (scripts/kernel-ab.sh),
then the geomean of the A/B ratios (> 1: B faster). For a change that touches many kernels
(a schedule shared by variants, LLVM options: a wrapper script that sets HL_LLVM_ARGS and
runs the generator is a GEN_B too).
  scripts/suite-kernel-ab.py GEN_A GEN_B [--batch bench/suite.conv] [--layout nhwc|nchw]
                             [--dir both|BWD_D|BWD_W] [--rounds 5] [--only NAME_REGEX]
float32 only (the suite's dtype); one line per kernel as it finishes."""
import argparse, math, os, re, subprocess, sys

# Variant suffix -> generator param, stripped in this order: the rule of
# runtime/src/kernel_variant.h (KernelVariant::generator_params) and generators/CMakeLists.txt.
SUFFIXES = [("_wg", "winograd=true"), ("_sg", "small_groups=true"), ("_cs", "channel_slabs=true"),
            ("_pw", "pointwise=true"), ("_db", "dy_broadcasts=true"), ("_sd", "staged_dy=true"),
            ("_xp", "plain_x=true"), ("_gt", "group_tasks=true"), ("_wr", "whole_reduction=true"), ("_ip", "dy_in_place=true"),
            ("_fp", "flat_planes=true"), ("_px", "pixel_vectors=true"), ("_s2", "x_phases=2")]


def generator_params(variant):
    base, params = variant, []
    for suffix, param in SUFFIXES:
        if base.endswith(suffix):
            params.append(param)
            base = base[:-len(suffix)]
    return " ".join(["dtype=float32"] + params + ["layout=" + base])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gen_a"), ap.add_argument("gen_b")
    ap.add_argument("--batch", default="bench/suite.conv")
    ap.add_argument("--layout", default="nhwc")
    ap.add_argument("--dir", default="both")
    ap.add_argument("--rounds", default="5")
    ap.add_argument("--only", default="", help="problem names matching this regex")
    args = ap.parse_args()
    scripts = os.path.dirname(os.path.abspath(__file__))
    ratios = []
    for line in open(args.batch):
        problem = line.strip()
        if not problem or problem.startswith("#"):
            continue
        name = re.search(r'n"([^"]+)"', problem).group(1)
        if args.only and not re.search(args.only, name):
            continue
        found = subprocess.run([os.path.join(scripts, "fixed-strings.sh"), problem, args.layout, args.dir],
                               capture_output=True, text=True, check=True).stdout.splitlines()
        for head, fixed in zip(found[0::2], found[1::2]):
            generator, _dtype, variant = head.split()
            buffers = ["dy", "w", "dx"] if generator == "convgrad_bwd_data" else ["x", "dy", "dw"]
            run = subprocess.run([os.path.join(scripts, "kernel-ab.sh"), args.gen_a, args.gen_b, generator,
                                  generator_params(variant), fixed] + buffers + [args.rounds],
                                 capture_output=True, text=True)
            timing = [l for l in run.stdout.splitlines() if l.startswith("A ")]
            direction = "BWD_D" if generator == "convgrad_bwd_data" else "BWD_W"
            if not timing:
                print(f"{direction} {name} {variant}: FAILED\n{run.stderr[-400:]}", flush=True)
                continue
            ratios.append(float(timing[-1].split("A/B")[1]))
            print(f"{direction} {name} {variant}: {timing[-1]}", flush=True)
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"{len(ratios)} kernels, geomean A/B {geomean:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    sys.exit(main())
