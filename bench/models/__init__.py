"""`python -m bench models`: the model workloads (workloads.py) on each side,
each (workload, side) in its own fresh process, merged into one report.

    python -m bench models                                   # all workloads, all sides
    python -m bench models --workloads gpt2_train --sides privateuseone,cuda
    python -m bench models --tiny --steps 2 --sides privateuseone,cpu --out /tmp/m

Every (workload, side) runs twice in fresh processes: first with empty kernel
caches (Triton's TRITON_CACHE_DIR, and Inductor's for torch.compile, both
pointed at a new temporary folder), measuring everything; then once more with
those caches warm, measuring only the first step. Each piece is written to
<out>/models_pieces/ as it finishes, and the report (models.{json,md,png})
is remade from every piece there, so workloads run in separate invocations
merge into one report. A piece that crashed or timed out keeps its error.
"Empty caches" includes ours: TORCH_EXT_CACHE_DIR (the warm-up records and the
convolution tuning file) points into the same temporary folder.

On a machine with several GPUs, `--gpus N` runs N pieces side by side, each in
its own process on its own GPU (CUDA_VISIBLE_DEVICES) and its own 1/N of the CPUs
(`cpu_share`: pinned, with Inductor's and OpenMP's thread counts to match); a
piece never shares a GPU or a core.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.models import report
from bench.models.workloads import WORKLOADS

DEFAULT_SIDES = "privateuseone,privateuseone_compile,cuda,compile,flaggems"
NO_KERNEL_CACHE = ("cuda", "cpu")  # sides with nothing to warm: no warm-cache run


def default_out():
    """bench/results/<GPU name>/ (spaces as underscores), or .../host without a GPU."""
    import torch

    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "host"
    return Path(__file__).resolve().parent.parent / "results" / name.replace(" ", "_")


def cpu_share(slot, slots):
    """The CPUs piece `slot` of `slots` side-by-side pieces may use: this process's CPUs
    cut into `slots` contiguous parts. Unpinned, cold compiles (ours, Inductor's worker
    pool) can take every core from a host-bound neighbour's timed steps (session 13, 4
    H100s unpinned: torch eager's GPT-2 step 79.8 ms beside compiling pieces, against
    50.8 in an earlier run alone)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if slots <= 1 or len(cpus) < slots:
        return None  # one piece at a time, or too few CPUs to share: no pinning
    per = len(cpus) // slots
    return cpus[slot * per : (slot + 1) * per]


def _run_piece(workload, side, args, cache, first_only, out_file, gpu=None, cpus=None):
    cmd = [sys.executable, "-m", "bench.models.runner", "--workload", workload, "--side", side]
    cmd += ["--steps", str(args.steps), "--out", str(out_file)]
    if args.tiny:
        cmd.append("--tiny")
    if first_only:
        cmd.append("--first-only")
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "TRITON_CACHE_DIR": str(Path(cache) / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(Path(cache) / "inductor"),
        "TORCH_EXT_CACHE_DIR": str(Path(cache) / "torch_ext"),
    }
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    if cpus:  # bench.models.runner pins itself before importing torch
        env["BENCH_CPUS"] = ",".join(map(str, cpus))
        env["TORCHINDUCTOR_COMPILE_THREADS"] = env["OMP_NUM_THREADS"] = str(len(cpus))
    timeout = args.side_timeouts.get(side, args.timeout)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, timeout=timeout, capture_output=True, text=True, cwd=_root()
        )
        rc, tail = proc.returncode, (proc.stdout + proc.stderr)[-3000:]
    except subprocess.TimeoutExpired as e:
        rc, tail = "timeout", str(e.stdout or "")[-3000:]
    wall = time.perf_counter() - t0
    try:
        rec = json.loads(Path(out_file).read_text())
    except (OSError, ValueError):
        what = f"timed out after {timeout:g} s" if rc == "timeout" else f"exit code {rc}"
        rec = {"workload": workload, "side": side, "error": f"process {what}", "log_tail": tail}
    rec["process_wall_s"] = wall
    return rec


def _root():
    return str(Path(__file__).resolve().parent.parent.parent)


def _available(side):
    if side == "flaggems":
        import importlib.util

        return importlib.util.find_spec("flag_gems") is not None
    return True


def _piece(workload, side, args, pieces, slot, gpu):
    """Runs one (workload, side) cold, then warm, and writes its piece."""
    cpus = cpu_share(slot, args.gpus)
    with tempfile.TemporaryDirectory(prefix="bench_models_cache_") as cache:
        piece = pieces / f"{workload}__{side}.json"
        rec = _run_piece(workload, side, args, cache, False, piece, gpu, cpus)
        # torch eager keeps no compiled kernels on disk: its warm first step is its cold one.
        if not args.no_warm and "error" not in rec and side not in NO_KERNEL_CACHE:
            warm_file = pieces / f"{workload}__{side}.warm.tmp"
            warm = _run_piece(workload, side, args, cache, True, warm_file, gpu, cpus)
            rec["first_step_warm_s"] = warm.get("first_step_s")
            if "error" in warm:
                rec["warm_error"] = warm["error"]
            warm_file.unlink(missing_ok=True)
    rec["steps_arg"] = args.steps
    rec["side_by_side_gpus"] = args.gpus
    if cpus:
        rec["cpus"] = len(cpus)
    piece.write_text(json.dumps(rec, indent=1))
    status = rec.get("error") or f"{rec.get('ms', float('nan')):.2f} ms"
    where = "" if gpu is None else f", GPU {gpu}"
    print(f"== {workload} / {side}: {status} ({rec['process_wall_s']:.0f} s{where})", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench models")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--sides", default=DEFAULT_SIDES)
    p.add_argument("--steps", type=int, default=20, help="steps in all, warm-up included")
    p.add_argument("--tiny", action="store_true", help="2-layer models, small batches")
    p.add_argument("--out", default=None, help="default: bench/results/<GPU name>/")
    p.add_argument("--timeout", type=float, default=900, help="seconds per process")
    p.add_argument(
        "--side-timeout",
        default="",
        help="SIDE=SECONDS[,...]: another --timeout for a side (e.g. flaggems=150, whose "
        "ResNet-50 runs for minutes without a step)",
    )
    p.add_argument("--no-warm", action="store_true", help="skip the warm-cache first-step run")
    p.add_argument(
        "--gpus",
        type=int,
        default=1,
        help="pieces side by side, one per GPU (CUDA_VISIBLE_DEVICES)",
    )
    args = p.parse_args(argv)

    out = Path(args.out) if args.out else default_out()
    pieces = out / "models_pieces"
    pieces.mkdir(parents=True, exist_ok=True)
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        p.error(f"unknown workloads {unknown}; known: {', '.join(WORKLOADS)}")
    if args.gpus < 1:
        p.error("--gpus must be at least 1")
    args.side_timeouts = {}
    for item in filter(None, args.side_timeout.split(",")):
        side, _, secs = item.partition("=")
        try:
            args.side_timeouts[side.strip()] = float(secs)
        except ValueError:
            p.error(f"--side-timeout {item!r}: expected SIDE=SECONDS")
    jobs = []
    for workload in workloads:
        for side in filter(None, args.sides.split(",")):
            if _available(side):
                jobs.append((workload, side))
            else:
                print(f"== {workload} / {side}: flag_gems is not importable, skipped", flush=True)
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if args.gpus > 1 and visible and len(visible) < args.gpus:
        p.error(f"--gpus {args.gpus}, but CUDA_VISIBLE_DEVICES names {len(visible)}")
    if args.gpus > 1 and not visible:
        import torch

        if torch.cuda.is_available() and torch.cuda.device_count() < args.gpus:
            p.error(f"--gpus {args.gpus}, but this machine has {torch.cuda.device_count()} GPUs")
    slots = queue.Queue()  # (slot, GPU) free now; a piece takes one and gives it back
    for i in range(args.gpus):
        slots.put((i, (visible[i] if visible else i) if args.gpus > 1 else None))

    def run(job):
        slot = slots.get()
        try:
            _piece(*job, args, pieces, *slot)
        finally:
            slots.put(slot)

    with ThreadPoolExecutor(max_workers=args.gpus) as pool:
        list(pool.map(run, jobs))
    md = report.render(out)
    print(md)
    return 0
