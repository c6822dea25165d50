#!/usr/bin/env python3
"""convgrad on a GPU against cuDNN (through PyTorch), on the problems of one `convgrad bench` run.

    convgrad bench --batch bench/suite.conv --device cuda --dtype f32 --json cg.json
    python3 bench/cudnn_bench.py cg.json [--min-time 0.3]

Reads convgrad's JSON (which carries each canonical problem and convgrad's median ms), times
the same gradients with torch.ops.aten.convolution_backward (cuDNN, NHWC = channels_last or
NCHW as in the JSON, same dtype, tensors already on the GPU, warm-up, median of repeats,
CUDA events), and prints one table: ms, TFLOP/s and cuDNN time / convgrad time (> 1: convgrad
faster), with geomeans per class and direction. scripts/gpu-check.sh runs both in one go.
"""
import argparse
import json
import math
import statistics
import sys

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16}


def median_ms(fn, min_time_s):
    fn()  # warm-up: cuDNN picks its algorithm
    torch.cuda.synchronize()
    times, total = [], 0.0
    while (len(times) < 5 or total < min_time_s) and len(times) < 200:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        t = start.elapsed_time(end)
        times.append(t)
        total += t / 1e3
    return statistics.median(times)


def cudnn_ms(row, dtype, nhwc, min_time_s):
    p = row["problem"]
    rank = len(p["input_size"])
    n, g, ci, co = p["batch"], p["groups"], p["in_channels"], p["out_channels"]
    x = torch.randn([n, ci] + p["input_size"], device="cuda", dtype=dtype)
    dy = torch.randn([n, co] + p["output_size"], device="cuda", dtype=dtype)
    w = torch.randn([co, ci // g] + p["kernel_size"], device="cuda", dtype=dtype)
    if nhwc and rank in (2, 3):
        fmt = torch.channels_last if rank == 2 else torch.channels_last_3d
        x, dy, w = (t.contiguous(memory_format=fmt) for t in (x, dy, w))
    # PyTorch pads symmetrically: where pads_end differs, x is padded (or, negative, cropped)
    # at the end so the output size matches dy.
    pad = p["pads_begin"]
    extra = [e - b for b, e in zip(p["pads_begin"], p["pads_end"])]
    if any(extra):
        flat = []
        for e in reversed(extra):
            flat += [0, e]  # F.pad crops for negative amounts
        x = torch.nn.functional.pad(x, flat)
    data = row["dir"] == "BWD_D"
    mask = [data, not data, False]

    def run():
        torch.ops.aten.convolution_backward(dy, x, w, None, p["strides"], pad, p["dilations"], False,
                                            [0] * rank, g, mask)
    return median_ms(run, min_time_s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("convgrad_json")
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--json", help="write the joint results here")
    a = ap.parse_args()
    cg = json.load(open(a.convgrad_json))
    if not torch.cuda.is_available():
        sys.exit("cudnn_bench: PyTorch sees no CUDA device")
    dtype = DTYPES.get(cg["dtype"])
    if dtype is None:
        sys.exit(f"cudnn_bench: cuDNN has no {cg['dtype']} convolution")
    torch.backends.cudnn.benchmark = True
    nhwc = cg["layout"] == "nhwc"
    print(f"convgrad ({cg.get('device', '?')}) vs cuDNN {torch.backends.cudnn.version()} (PyTorch {torch.__version__}) "
          f"on {torch.cuda.get_device_name()}, {cg['dtype']}, {cg['layout']}\n")
    print("| problem | class | dir | convgrad ms | TFLOP/s | cuDNN ms | cuDNN / convgrad |")
    print("|---|---|---|---|---|---|---|")
    logs = {}
    for row in cg["results"]:
        ms = cudnn_ms(row, dtype, nhwc, a.min_time)
        row["cudnn_ms"] = ms
        ratio = ms / row["convgrad_ms"]
        tflops = row["gflops"] / 1e3
        print(f"| {row['name']} | {row['class']} | {row['dir']} | {row['convgrad_ms']:.3f} | {tflops:.2f} | "
              f"{ms:.3f} | {ratio:.3f}x |", flush=True)
        for key in (row["class"], "all"):
            logs.setdefault((row["dir"], key), []).append(math.log(ratio))
    print("\nGeomean of cuDNN time / convgrad time (> 1: convgrad faster):\n")
    print("| class | BWD_D | BWD_W |\n|---|---|---|")
    for cls in ("dense", "strided", "dilated", "grouped", "depthwise", "3d", "all"):
        cells = []
        for d in ("BWD_D", "BWD_W"):
            v = logs.get((d, cls))
            cells.append(f"{math.exp(sum(v) / len(v)):.3f}x" if v else "-")
        print(f"| {cls} | {cells[0]} | {cells[1]} |")
    if a.json:
        json.dump(cg, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
