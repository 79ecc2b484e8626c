"""Kernels per aten op in one step of a model workload: `python -m bench census`.

    python -m bench census --workload llama_decode_static --side privateuseone [--tiny]
    python -m bench census --workload llama_decode_static --side cuda

Runs the workload (bench/models/workloads.py) for a few warm-up steps, then one step
under torch.profiler, and prints, per top-level aten op (the op the model called, its
callees folded in), the calls and the kernels launched. On `privateuseone` a kernel is
one of our `triton:<kernel>` ranges (Python launches and launch-plan replays alike); on
`cuda` it is one of the profiler's CUDA kernel events of torch's own kernels. Running
both sides shows which ops launch more kernels than torch's, the model benchmark's
"kernels/step" column broken down.
"""

from __future__ import annotations

import argparse
import collections
import json

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
    """{top-level aten op: [calls, kernels]} of one profiled step."""
    table = collections.defaultdict(lambda: [0, 0])
    for e in events:
        if not e.name.startswith("aten::"):
            continue
        top = _top_aten(e)
        if top == e.name and _top_aten(e.cpu_parent) is None:
            table[top][0] += 1
        if side == "cuda":
            table[top][1] += len(getattr(e, "kernels", ()))
    if side != "cuda":
        for e in events:
            if e.name.startswith("triton:"):
                table[_top_aten(e) or "(outside aten ops)"][1] += 1
    return dict(table)


def census(workload, side, tiny=False, warmup=3):
    """(table, total kernels) of one step of `workload` on `side`."""
    from torch.profiler import ProfilerActivity, profile

    from bench.models import workloads

    if side != "cuda":
        import torch_ext  # noqa: F401  (the device)
    build = workloads.WORKLOADS[workload].build
    run = build(torch.device(side), tiny)
    for _ in range(warmup):
        run.step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if side == "cuda" else [])
    with profile(activities=activities) as prof:
        run.step()
        if side == "cuda":
            torch.cuda.synchronize()
    table = count(prof.events(), side)
    return table, sum(k for _, k in table.values())


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench census")
    p.add_argument("--workload", default="llama_decode_static")
    p.add_argument("--side", default="privateuseone", help="privateuseone or cuda")
    p.add_argument("--tiny", action="store_true", help="2-layer models (bench models --tiny)")
    p.add_argument("--json", default="", help="also write the table here")
    args = p.parse_args(argv)
    table, total = census(args.workload, args.side, args.tiny)
    print(f"{args.workload} on {args.side}: {total} kernels in one step")
    print(f"{'kernels':>8} {'calls':>6}  op")
    for op, (calls, kernels) in sorted(table.items(), key=lambda kv: -kv[1][1]):
        if kernels:
            print(
                f"{kernels:8d} {calls:6d}  {op}{'  (more than one per call)' if kernels > calls > 0 else ''}"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": args.workload, "side": args.side, "total": total,
                       "ops": table}, f, indent=1)  # fmt: skip
    return 0
