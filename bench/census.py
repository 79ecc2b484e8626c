"""Kernels per aten op in one step of a model workload: `python -m bench census`.

    python -m bench census --workload llama_decode_static --side privateuseone [--tiny]
    python -m bench census --workload llama_decode_static --side cuda
    python -m bench census --workload llama_decode_static --side cuda --cprofile

Runs the workload (bench/models/workloads.py) for a few warm-up steps, then one step
under torch.profiler, and prints, per top-level aten op (the op the model called, its
callees folded in), the calls and the kernels launched. On `privateuseone` a kernel is
one of our `triton:<kernel>` ranges (Python launches and launch-plan replays alike); on
`cuda` it is one of the profiler's CUDA kernel events of torch's own kernels. Running
both sides shows which ops launch more kernels than torch's, the model benchmark's
"kernels/step" column broken down.

Where a GPU is present (either side), the step is also traced through CUPTI and each
kernel's device time is charged to the top-level aten op whose CPU range holds its launch
(the runtime or driver call of the same correlation id): the table then has device µs per
op, and the summary the step's GPU-busy time (the union of kernel intervals) beside its
span, which says whether the step is bound by the GPU or by the host.

`--cprofile` instead times steps without any profiler and then prints cProfile's table of
a few steps by own time per Python-visible callable: the torch profiler's CUPTI callbacks
cost each side differently per launch, so a host-bound step's gap reads differently under
it (the static-cache decode: ours faster under the profiler, slower without).
"""

from __future__ import annotations

import argparse
import collections
import json
import os

import torch


def _top_aten(e):
    """The outermost aten op above profiler event `e` (None: none)."""
    top = None
    while e is not None:
        if e.name.startswith("aten::"):
            top = e.name
        e = e.cpu_parent
    return top


def count(events, side):
    """{top-level aten op: [calls, kernels, host µs]} of one profiled step (host µs: the
    CPU time of the op's top-level calls, what it costs the thread that launches)."""
    table = collections.defaultdict(lambda: [0, 0, 0.0])
    for e in events:
        if not e.name.startswith("aten::"):
            continue
        top = _top_aten(e)
        if top == e.name and _top_aten(e.cpu_parent) is None:
            table[top][0] += 1
            table[top][2] += e.cpu_time_total
        if side == "cuda":
            table[top][1] += len(getattr(e, "kernels", ()))
    if side != "cuda":
        for e in events:
            # the launch's range on the launching thread: with CUDA activity on, the
            # profiler also copies each range onto the GPU's timeline (no CPU parent)
            if e.name.startswith("triton:") and e.device_type == torch.autograd.DeviceType.CPU:
                table[_top_aten(e) or "(outside aten ops)"][1] += 1
    return dict(table)


def _call_key(name, args):
    """An op call's operands as the profiler recorded them (record_shapes=True)."""
    parts = [name]
    for field in ("Input Dims", "Input type", "Input Strides"):
        if field in args:
            parts.append(json.dumps(args[field], separators=(",", ":")))
    return " ".join(parts)


def device_times(trace, detail=None):
    """From a chrome trace's events: ({top-level aten op: [kernels, device µs]},
    {"busy_us", "span_us", "kernels"}). A kernel (cat "kernel") is matched by its
    correlation id to the launching runtime/driver call, and charged to the outermost
    "cpu_op" named aten::* of the same thread whose range holds the launch. With
    `detail` (a dict), also fills detail["calls"] ({op with its operands' sizes, dtypes
    and strides: [kernels, device µs, calls]}) and detail["kernels"] ({kernel name:
    [launches, device µs]}): which call of an op is the slow one, and in which kernel."""
    launches, kernels, ops = {}, [], collections.defaultdict(list)
    for e in trace:
        cat, args = e.get("cat", ""), e.get("args") or {}
        if cat == "kernel":
            kernels.append((e["ts"], e.get("dur", 0), args.get("correlation"), e.get("name")))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            launches[args["correlation"]] = (e.get("tid"), e["ts"])
        elif cat == "cpu_op" and e.get("name", "").startswith("aten::"):
            key = _call_key(e["name"], args)
            ops[e.get("tid")].append((e["ts"], e["ts"] + e.get("dur", 0), e["name"], key))
    for spans in ops.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
    table = collections.defaultdict(lambda: [0, 0.0])
    calls = collections.defaultdict(lambda: [0, 0.0, set()])
    by_kernel = collections.defaultdict(lambda: [0, 0.0])
    for ts, dur, corr, kname in kernels:
        top, key, call = "(outside aten ops)", "(outside aten ops)", None
        if corr in launches:
            tid, at = launches[corr]
            for start, end, name, k in ops.get(tid, ()):
                if start > at:
                    break
                if at <= end:  # the first (outermost) range that holds the launch
                    top, key, call = name, k, (tid, start)
                    break
        table[top][0] += 1
        table[top][1] += dur
        calls[key][0] += 1
        calls[key][1] += dur
        calls[key][2].add(call)
        by_kernel[kname][0] += 1
        by_kernel[kname][1] += dur
    if detail is not None:
        detail["calls"] = {k: [n, us, len(c)] for k, (n, us, c) in calls.items()}
        detail["kernels"] = {k: v for k, v in by_kernel.items()}
    busy, end_ = 0.0, None
    for ts, dur, *_ in sorted(kernels):
        if end_ is None or ts >= end_:
            busy += dur
            end_ = ts + dur
        elif ts + dur > end_:
            busy += ts + dur - end_
            end_ = ts + dur
    span = max(k[0] + k[1] for k in kernels) - min(k[0] for k in kernels) if kernels else 0.0
    return dict(table), {"busy_us": busy, "span_us": span, "kernels": len(kernels)}


def trace_events(prof):
    """The chrome-trace events of a finished torch.profiler run."""
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]
    finally:
        os.unlink(path)


def census(workload, side, tiny=False, warmup=3, device_time=None):
    """(table, total kernels) of one step of `workload` on `side`; with device_time (a
    dict), also fills it with device_times()'s result ("ops", "summary") where CUPTI
    sees a GPU."""
    from torch.profiler import ProfilerActivity, profile

    from bench.models import workloads

    if side != "cuda":
        import torch_ext  # noqa: F401  (the device)
    build = workloads.WORKLOADS[workload].build
    run = build(torch.device(side), tiny)
    for _ in range(warmup):
        run.step()
    gpu = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    sync = getattr(getattr(torch, side, None), "synchronize", None)
    if sync:
        sync()
    with profile(activities=activities, record_shapes=gpu) as prof:
        run.step()
        if sync:
            sync()
    table = count(prof.events(), side)
    if gpu and device_time is not None:
        detail = {}
        ops, summary = device_times(trace_events(prof), detail)
        device_time.update(ops=ops, summary=summary, **detail)
    return table, sum(row[1] for row in table.values())


def thread_cpu():
    """{thread id: (name, CPU seconds used so far)} of this process's threads (Linux's
    /proc/self/task; {} elsewhere)."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    tick = os.sysconf("SC_CLK_TCK")
    for tid in tids:
        task = f"/proc/self/task/{tid}"
        try:
            with open(f"{task}/comm") as f:
                name = f.read().strip()
            try:  # nanoseconds on the CPU (a clock tick, 10 ms, is a GPU step's length)
                with open(f"{task}/schedstat") as f:
                    out[tid] = (name, int(f.read().split()[0]) * 1e-9)
                continue
            except (OSError, ValueError, IndexError):
                pass
            with open(f"{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)  # utime + stime
        except OSError:  # the thread ended meanwhile
            continue
    return out


def cpu_per_step(before, after, steps):
    """[(thread name, CPU ms a step)] between two thread_cpu() readings, busiest first,
    threads under 0.05 ms a step left out: whether a step's host work is one thread's
    (the forward on the main thread, the backward on autograd's device thread after it)
    or spread."""
    rows = []
    for tid, (name, s) in after.items():
        ms = (s - before.get(tid, (name, 0.0))[1]) * 1e3 / max(steps, 1)
        if ms >= 0.05:
            rows.append((name, ms))
    return sorted(rows, key=lambda r: -r[1])


def host_profile(workload, side, tiny=False, warmup=6, steps=10, top=45):
    """(median ms per step without any profiler, a text of each thread's CPU ms a step
    over those steps then cProfile's table of `steps` steps by own time): where the
    launching thread's time goes per Python-visible callable (`{method 'index_copy_'
    ...}` is the op's whole call, C++ included), without the torch profiler's
    per-launch CUPTI cost, which differs between the two sides."""
    import cProfile
    import io
    import pstats
    import statistics
    import time

    from bench.models import workloads

    if side != "cuda":
        import torch_ext  # noqa: F401  (the device)
    run = workloads.WORKLOADS[workload].build(torch.device(side), tiny)
    sync = getattr(getattr(torch, side, None), "synchronize", None) or (lambda: None)
    for _ in range(warmup):
        run.step()
    sync()
    times = []
    before = thread_cpu()
    for _ in range(steps):
        t = time.perf_counter()
        run.step()
        sync()
        times.append(time.perf_counter() - t)
    threads = cpu_per_step(before, thread_cpu(), steps)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        run.step()
    sync()
    prof.disable()
    out = io.StringIO()
    out.write("CPU ms a step by thread (the timed steps): ")
    listed = ", ".join(f"{name} {ms:.2f}" for name, ms in threads)
    out.write((listed or "no thread at 0.05 ms or more") + "\n")
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return statistics.median(times) * 1e3, out.getvalue()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench census")
    p.add_argument("--workload", default="llama_decode_static")
    p.add_argument("--side", default="privateuseone", help="privateuseone or cuda")
    p.add_argument("--tiny", action="store_true", help="2-layer models (bench models --tiny)")
    p.add_argument("--json", default="", help="also write the table here")
    p.add_argument("--top", type=int, default=40, help="rows of the heaviest calls and kernels")
    p.add_argument(
        "--cprofile",
        action="store_true",
        help="instead: ms per step without a profiler, then cProfile's callables by own time",
    )
    args = p.parse_args(argv)
    if args.cprofile:
        ms, table = host_profile(args.workload, args.side, args.tiny, top=args.top)
        print(f"{args.workload} on {args.side}: {ms:.2f} ms per step (median, no profiler)")
        print(table)
        return 0
    dt = {}
    table, total = census(args.workload, args.side, args.tiny, device_time=dt)
    print(f"{args.workload} on {args.side}: {total} kernels in one step")
    if dt:
        s = dt["summary"]
        print(
            f"GPU busy {s['busy_us'] / 1e3:.2f} ms of a {s['span_us'] / 1e3:.2f} ms span "
            f"({s['busy_us'] / max(s['span_us'], 1e-9):.0%}), {s['kernels']} kernels (CUPTI)"
        )
    times = dt.get("ops", {})
    host = sum(row[2] for row in table.values())
    print(f"host: {host / 1e3:.2f} ms in top-level aten ops (under the profiler)")
    print(f"{'kernels':>8} {'calls':>6} {'device ms':>10} {'host ms':>8} {'host µs/call':>12}  op")
    order = sorted(table, key=lambda op: (-times.get(op, [0, 0.0])[1], -table[op][1]))
    for op in order + sorted(set(times) - set(table)):
        calls, kernels, host_us = table.get(op, (0, 0, 0.0))
        ms = times.get(op, [0, 0.0])[1] / 1e3
        if kernels or ms or host_us:
            many = "  (more than one per call)" if kernels > calls > 0 else ""
            per = host_us / max(calls, 1)
            print(
                f"{kernels:8d} {calls:6d} {ms:10.3f} {host_us / 1e3:8.3f} {per:12.1f}  {op}{many}"
            )
    for title, rows in (("calls", dt.get("calls", {})), ("kernels", dt.get("kernels", {}))):
        top = sorted(rows.items(), key=lambda kv: -kv[1][1])[: args.top]
        if top:
            print(f"\nheaviest {title} (kernels, device ms, µs per kernel):")
        for k, (n, us, *_) in top:
            print(f"{n:8d} {us / 1e3:10.3f} {us / max(n, 1):9.1f}  {k}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": args.workload, "side": args.side, "total": total,
                       "ops": table, "device": dt}, f, indent=1)  # fmt: skip
    return 0
