"""The benchmark command: torch_ext on privateuseone vs PyTorch eager, torch.compile
and FlagGems on cuda, same ops, shapes and dtypes, one run.

    python -m bench --out bench_out            # on a machine with an NVIDIA GPU
    python -m bench --out /tmp/b --torch-device cpu --scale 0.001 --impls torch   # dry run
    python -m bench models ...   # real models (bench/models/, docs/bench_models.md)
    python -m bench host ...     # per-op host cost (bench/host.py)
    python -m bench census ...   # kernels per aten op in one model step (bench/census.py)
    python -m bench lengths ...  # launch plans recorded at new prompt lengths (bench/lengths.py)
    python -m bench merge --out all DIR...   # one report over several runs' results

Each implementation runs in its own worker process, one after the other (see
worker.py for why); then report.py writes results.{md,json,png} into --out.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["models"]:
        from bench import models

        return models.main(argv[1:])
    if argv[:1] == ["host"]:
        from bench import host

        return host.main(argv[1:])
    if argv[:1] == ["census"]:
        from bench import census

        return census.main(argv[1:])
    if argv[:1] == ["lengths"]:
        from bench import lengths

        return lengths.main(argv[1:])
    if argv[:1] == ["merge"]:
        m = argparse.ArgumentParser(prog="python -m bench merge")
        m.add_argument("--out", required=True)
        m.add_argument("dirs", nargs="+", help="result directories (their *.jsonl)")
        args = m.parse_args(argv[1:])
        report.render(args.out, args.dirs)
        print(f"wrote {args.out}/results.md from {len(args.dirs)} runs")
        return 0
    p = argparse.ArgumentParser(prog="python -m bench")
    p.add_argument("--out", default="bench_out")
    p.add_argument("--impls", default="torch,compile,ours,flaggems")
    p.add_argument("--torch-device", default="cuda")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--small-calls", type=int, default=2000)
    p.add_argument(
        "--ops", default="", help="op names, or parts of 'op shape' with a space (bench.worker)"
    )
    p.add_argument(
        "--suite",
        default="ops",
        choices=["ops", "conv", "transformer"],
        help="conv: bench/conv_cases.py; transformer: bench/transformer_cases.py",
    )
    p.add_argument("--shard", default="", help="i/n: run every n-th case from the i-th")
    p.add_argument("--timeout", type=float, default=900, help="seconds per worker")
    args = p.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for impl in filter(None, args.impls.split(",")):
        if impl == "flaggems":
            try:
                import importlib.util

                if importlib.util.find_spec("flag_gems") is None:
                    print("FlagGems is not importable: its column is left empty", flush=True)
                    continue
            except Exception:
                continue
        cmd = [
            sys.executable,
            "-m",
            "bench.worker",
            "--impl",
            impl,
            "--out",
            str(out / f"{impl}.jsonl"),
            "--torch-device",
            args.torch_device,
            "--scale",
            str(args.scale),
            "--small-calls",
            str(args.small_calls),
            "--ops",
            args.ops,
            "--suite",
            args.suite,
            "--shard",
            args.shard,
        ]
        t0 = time.perf_counter()
        print(f"== {impl}: {' '.join(cmd)}", flush=True)
        with open(out / f"{impl}.log", "w") as log:
            try:
                rc = subprocess.run(
                    cmd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=args.timeout,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                ).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        print(
            f"== {impl}: exit {rc} after {time.perf_counter() - t0:.0f} s "
            f"(log: {out / f'{impl}.log'})",
            flush=True,
        )
    summary, plotted = report.render(out)
    print((out / "results.md").read_text())
    if not plotted:
        print("matplotlib not importable: no PNG written")


if __name__ == "__main__":
    main()
