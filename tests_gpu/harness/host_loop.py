"""Calls bench host's cases (bench/host.py) back to back for a while, for a sampling
profiler of the host path (py-spy with --native shows the C++ frames):

    py-spy record --native -r 2000 -f raw -o adamw.txt -- \\
        python3 tests_gpu/harness/host_loop.py --ops adamw_step --rows 1 --seconds 5
    python3 tests_gpu/harness/host_loop.py --ops cat,embedding --device cuda  # torch's side

Prints µs per call of each case, measured outside the profiler's first second."""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402

from bench.host import cases  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", required=True, help="comma-separated case names of bench/host.py")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--device", default="privateuseone")
    a = ap.parse_args()
    if a.device == "privateuseone":
        import torch_ext  # noqa: F401
    mod = getattr(torch, torch.device(a.device).type)
    wanted = a.ops.split(",")
    with torch.no_grad():
        for name, fn, args in cases(torch, torch.device(a.device), a.rows):
            if name not in wanted:
                continue
            for _ in range(50):
                fn(*args)
            mod.synchronize()
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < a.seconds:
                for _ in range(100):
                    fn(*args)
                n += 100
            mod.synchronize()
            print(
                f"{name} {a.rows}x64 on {a.device}: {(time.perf_counter() - t0) / n * 1e6:.1f} us per call"
            )


if __name__ == "__main__":
    main()
