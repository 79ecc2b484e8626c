"""Tiling sweep for torch_ext's matmul kernel (ops/matmul.py `_mm_kernel`) on a GPU,
against cuBLAS (torch.mm on the same operands, the same strides).

Runs the kernel on torch.cuda tensors (no torch_ext._C needed, as tune_reduce.py does)
for the transformer GEMMs of issue 15 at 4096 tokens, in the three orientations training
needs ("nn": x @ W with W stored K x N, GPT-2's Conv1D forward; "nt": x @ W.t(), a
Linear's forward and Conv1D's input gradient; "tn": x.t() @ dY, a weight gradient), and
prints per case each config's TFLOP/s and % of cuBLAS, then the best config per layout.
Used to choose backends/cuda/spec.py's mm_config.

    python tests_gpu/harness/tune_mm.py                  # all cases, bf16
    TUNE_CASES=4096x4096x4096 python tests_gpu/harness/tune_mm.py
    TUNE_DEVICE=cpu TUNE_CASES=64x64x64 python ...       # an interpreter dry run
    TUNE_TMA=1 TUNE_SPLITS=0 python ...                 # the TMA kernel's tiles, no splits
"""

import itertools
import json
import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from torch_ext.ops import matmul  # noqa: E402

# M x K x N at 4096 tokens: GPT-2 124M and the Llama config of bench/models, and 4096^3.
# Each runs in the three layouts, so 768 -> 50257 covers the LM head's forward (nt, as
# F.linear) and the two gradients with the vocabulary as K or M.
SHAPES = [
    (4096, 768, 2304), (4096, 768, 768), (4096, 768, 3072), (4096, 3072, 768),
    (4096, 768, 50257), (4096, 1024, 3072), (4096, 1024, 5632), (4096, 2816, 1024),
    (4096, 1024, 32000), (4096, 4096, 4096),
    # GPT-2's LM head backward: the 50257-wide gradient as A (rows not 16-byte aligned)
    (4096, 50257, 768), (50257, 4096, 768),
]  # fmt: skip
TILES = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
    (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 8, 3),
    (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 256, 64, 4, 4), (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 4), (128, 256, 32, 8, 4),
]  # fmt: skip
# each tile shape as the driver's rule splits K (a 5-tuple), and with K split 2 and 3
# ways (a 6th element, as ops/matmul.py's tuning candidates carry it)
CONFIGS = TILES + [(*t, s) for t in TILES[:4] for s in (2, 3)]
if os.environ.get("TUNE_SPLITS") == "0":  # the tile shapes alone
    CONFIGS = list(TILES)
if os.environ.get("TUNE_TMA") == "1":  # and the persistent TMA kernel's (ops/matmul_tma.py)
    from torch_ext.ops import matmul_tma  # noqa: E402

    CONFIGS += [(*t, matmul_tma.TMA) for t in TILES[:6]]


def operands(M, K, N, layout, dtype):
    """(a, b) of a @ b with a M x K and b K x N, stored as the layout says."""
    a = torch.randn(M, K, device=DEV, dtype=dtype)
    if layout[0] == "t":
        a = torch.randn(K, M, device=DEV, dtype=dtype).t()
    b = torch.randn(K, N, device=DEV, dtype=dtype)
    if layout[1] == "t":
        b = torch.randn(N, K, device=DEV, dtype=dtype).t()
    return a, b


def run(a, b, c, cfg):
    """c = a @ b through ops/matmul.py's own path (launch, split-K workspace and counters)
    with the tuner answering `cfg`, so the harness follows the kernel's signature."""
    real = matmul.tuned
    matmul.tuned = lambda family, key, candidates, run, device: cfg
    try:
        matmul._bmm(a, b, c)
    finally:
        matmul.tuned = real


def bench(fn):
    """ms per call, replayed from a CUDA graph: the device's time, not the Python that
    launches (a 768-wide product takes less than its call's host cost)."""
    if DEV == "cpu":
        fn()
        return float("nan")
    from triton.testing import do_bench_cudagraph

    return do_bench_cudagraph(fn, rep=40)


def main():
    dtype = getattr(torch, os.environ.get("TUNE_DTYPE", "bfloat16"))
    wanted = os.environ.get("TUNE_CASES")
    shapes = [tuple(map(int, s.split("x"))) for s in wanted.split(",")] if wanted else SHAPES
    best = {}
    rows = []
    for (M, K, N), layout in itertools.product(shapes, ("nn", "nt", "tn")):
        a, b = operands(M, K, N, layout, dtype)
        c = torch.empty(M, N, device=DEV, dtype=dtype)
        ref = bench(lambda: torch.mm(a, b, out=c))
        flop = 2 * M * N * K
        results = []
        for cfg in CONFIGS:
            try:
                ms = bench(lambda: run(a, b, c, cfg))
            except Exception as e:  # out of shared memory and the like
                print(f"  {cfg}: {type(e).__name__}", flush=True)
                continue
            results.append((ms, cfg))
        got = torch.empty_like(c)
        results.sort()
        ms, cfg = results[0]
        run(a, b, got, cfg)
        err = (got.float() - torch.mm(a, b).float()).abs().max().item()
        print(
            f"{M}x{K}x{N} {layout}: cuBLAS {flop / ref / 1e9:.0f} TFLOP/s; best {cfg} "
            f"{flop / ms / 1e9:.0f} ({ref / ms:.0%}); current default "
            + ", ".join(f"{c_}: {ref / m:.0%}" for m, c_ in results if c_ in CONFIGS[:2])
            + f"; max err {err:.2e}",
            flush=True,
        )
        rows.append({"shape": [M, K, N], "layout": layout, "cublas_ms": ref,
                     "configs": [[list(c_), m] for m, c_ in results]})  # fmt: skip
        for m, c_ in results:
            best.setdefault(layout, {}).setdefault(c_, []).append(ref / m)
    print("\nGeomean % of cuBLAS per config and layout:")
    for layout, per in best.items():
        scored = sorted(
            ((torch.tensor(v).log().mean().exp().item(), c_) for c_, v in per.items()),
            reverse=True,
        )
        print(layout, ", ".join(f"{c_} {s:.0%}" for s, c_ in scored[:4]))
    out = os.environ.get("TUNE_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
