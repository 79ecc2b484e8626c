"""Runs one (workload, side) in this process and writes one JSON record.

    python -m bench.models.runner --workload gpt2_train --side privateuseone --out r.json

Sides: privateuseone (torch_ext), privateuseone_compile (torch.compile on
privateuseone: Inductor's kernels and ours), cuda (torch eager), compile
(torch.compile on cuda), flaggems (flag_gems.enable() on cuda), cpu (torch eager on the CPU:
the reference side of the CI smoke test). `--first-only` stops after the first
step (the warm-kernel-cache run). A failure is written as the record's
"error" with its traceback tail, so the report can show it.
"""

import argparse
import json
import os
import statistics
import sys
import time
import traceback

T_START = time.perf_counter()

if os.environ.get("BENCH_CPUS"):  # `--gpus N`: this piece's share of the CPUs, set first
    os.sched_setaffinity(0, {int(c) for c in os.environ["BENCH_CPUS"].split(",")})

import torch  # noqa: E402

SIDES = ("privateuseone", "privateuseone_compile", "cuda", "compile", "flaggems", "cpu")
COMPILED = ("privateuseone_compile", "compile")


def _ours(side):
    return side.startswith("privateuseone")


def _device_for(side):
    if _ours(side):
        import torch_ext  # noqa: F401

        return torch.device("privateuseone", 0)
    if side == "cpu":
        return torch.device("cpu")
    if side == "flaggems":
        import flag_gems

        flag_gems.enable()
    return torch.device("cuda", 0)


def _module(device):
    return None if device.type == "cpu" else getattr(torch, device.type)


def _sync(device):
    m = _module(device)
    if m is not None:
        m.synchronize()


def _ours_counters():
    from torch_ext import _C
    from torch_ext.ops import _launch

    fast = _C._plan_stats()["launched"] if hasattr(_C, "_plan_stats") else 0
    return _launch.launch_count, fast


def _profiled_step(step, device):
    """One step under torch.profiler's CUDA activity (CUPTI): (kernels it launched on
    the GPU, the time the GPU was busy with them in ms: the union of their intervals,
    bench/census.py's device_times). Busy time against the step's ms says whether the
    step waits on the GPU or on the host."""
    from torch.profiler import ProfilerActivity, profile

    from bench.census import device_times, trace_events

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        _sync(device)
    _, summary = device_times(trace_events(prof))
    return summary["kernels"], summary["busy_us"] / 1e3


def measure(args, rec):
    from bench.models.workloads import WORKLOADS

    wl = WORKLOADS[args.workload]
    device = _device_for(args.side)
    rec["device_name"] = (
        "cpu" if device.type == "cpu" else _module(device).get_device_name(device.index)
    )
    if _ours(args.side):
        import torch_ext

        rec["driver"] = torch_ext.driver_name()
    compile_fn = torch.compile if args.side in COMPILED else None
    run = wl.build(device, tiny=args.tiny, compile_fn=compile_fn)
    rec.update(params=run.params, unit=run.unit, units_per_step=run.units_per_step)
    rec["setup_s"] = time.perf_counter() - T_START
    m = _module(device)
    if m is not None and hasattr(m, "reset_peak_memory_stats"):
        m.reset_peak_memory_stats(device.index)

    t = time.perf_counter()
    losses = [run.step()]
    _sync(device)
    rec["first_step_s"] = time.perf_counter() - t
    if args.first_only:
        return
    warmup = min(3, max(args.steps - 2, 0))
    for _ in range(warmup):
        losses.append(run.step())
    _sync(device)
    if _ours(args.side):
        import torch_ext

        torch_ext.reset_fallback_stats()
        counters0 = _ours_counters()
    times = []
    while len(losses) < args.steps:
        t = time.perf_counter()
        losses.append(run.step())
        _sync(device)
        times.append(time.perf_counter() - t)
    timed = len(times)
    if not times:  # --steps 1: the first step is all there is
        times = [rec["first_step_s"]]
    ms = statistics.median(times) * 1e3
    rec.update(ms=ms, timed_steps=timed, per_s=run.units_per_step / (ms / 1e3))
    rec["loss"] = losses[-1] if wl.kind == "train" else None
    rec["losses"] = losses if wl.kind == "train" else None
    if m is not None and hasattr(m, "max_memory_allocated"):
        rec["peak_mem_gib"] = m.max_memory_allocated(device.index) / 2**30
    if _ours(args.side):
        import torch_ext

        rec["cpu_fallbacks"] = sum(torch_ext.fallback_stats().values())
        rec["fallback_ops"] = torch_ext.fallback_stats()
        rec["plans"] = dict(torch_ext._C._plan_stats())  # whole process; "reasons": op: why
        py1, fast1 = _ours_counters()
        py, fast = py1 - counters0[0], fast1 - counters0[1]
        if timed:
            rec["kernels_per_step"] = (py + fast) / timed
            rec["fast_path_share"] = fast / (py + fast) if py + fast else 0.0
    on_gpu = device.type == "cuda" or rec.get("driver") == "cuda"
    if on_gpu:  # ours too: a cross-check of the launcher's count, through CUPTI
        key = "kernels_per_step_cupti" if device.type != "cuda" else "kernels_per_step"
        try:
            rec[key], rec["gpu_busy_ms"] = _profiled_step(run.step, device)
        except Exception as e:  # the profiler is a bonus, not the measurement
            rec[key + "_error"] = f"{type(e).__name__}: {e}"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.models.runner")
    p.add_argument("--workload", required=True)
    p.add_argument("--side", required=True, choices=SIDES)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--first-only", action="store_true")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    rec = {"workload": args.workload, "side": args.side, "tiny": args.tiny}
    rec["triton_cache_dir"] = os.environ.get("TRITON_CACHE_DIR")
    if hasattr(os, "sched_getaffinity"):
        rec["cpus_allowed"] = len(os.sched_getaffinity(0))
    rec["torch"] = torch.__version__
    try:
        measure(args, rec)
    except BaseException as e:
        rec["error"] = f"{type(e).__name__}: {e}"[:2000]
        rec["traceback"] = traceback.format_exc()[-4000:]
    with open(args.out, "w") as f:
        json.dump(rec, f, indent=1)
    print(json.dumps({k: v for k, v in rec.items() if k not in ("traceback", "losses")}))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: a crashed device can hang it


if __name__ == "__main__":
    main()
