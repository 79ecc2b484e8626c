"""Causal attention with its query tiles heaviest first (spec `attention_heavy_first`, for
the forward and the dQ kernel; attention_kernels._query_tile) against the grid's order, at the SDPA suite's twelve
configurations (bench/cases.py: bf16, causal, heads 64 and 128, with and without
dropout), beside torch's SDPA on `cuda`. The dropout cases keep their mask where the op
would (`keeps_dropout_mask`), as the suite's calls do.

A line per configuration and order: the forward, the backward and both in ms, ours
against torch's, and the largest difference between the two orders' results (the same
tiles in another order: 0 but for the atomic dQ's order of additions).

    python tests_gpu/harness/attention_order.py
    ORDER_CASES=8x12x512x64,8x32x2048x128   B x H x L x D
    ORDER_DROPOUT=0,0.1
    TUNE_DEVICE=cpu ORDER_CASES=1x2x64x16 python ...   # an interpreter dry run
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from attention_dq import bench  # noqa: E402
from torch_ext.ops import attention  # noqa: E402

CASES = "8x12x512x64,8x12x2048x64,2x12x8192x64,8x32x512x128,8x32x2048x128,2x32x8192x128"


def ours(q, k, v, do, p):
    """(forward, backward) closures of our kernels as the op calls them."""
    B, H, L, D = q.shape
    draw = [torch.zeros((), dtype=torch.int64, device=DEV) for _ in range(2)]
    bits = None
    if p and attention.keeps_dropout_mask(q, L, L, D, D):
        n = attention._kept_bytes(B, H, L, L)
        bits = torch.zeros((n + 7) // 8, dtype=torch.int64, device=DEV)
        draw[1] = bits[0]
    fdrop = (p, 1234, 5678) if p else None
    res = {}

    def fwd():
        res["fwd"] = attention.flash_attention_fwd(q, k, v, None, True, None, fdrop, None,
                                                   draw, bits)  # fmt: skip
        return res["fwd"]

    def bwd():
        out, lse = res["fwd"]
        bdrop = (p, draw[0], draw[1]) if p else None
        return attention.flash_attention_bwd(do, q, k, v, out, lse, None, True, None, bdrop,
                                             draw[1] if bits is not None else None)  # fmt: skip

    return fwd, bwd


def main():
    real = attention.spec
    for p in (float(x) for x in os.environ.get("ORDER_DROPOUT", "0,0.1").split(",")):
        for case in os.environ.get("ORDER_CASES", CASES).split(","):
            B, H, L, D = (int(x) for x in case.split("x"))
            g = torch.Generator(device=DEV).manual_seed(0)
            q, k, v, do = (torch.randn(B, L, H, D, device=DEV, generator=g,
                                       dtype=torch.bfloat16).transpose(1, 2)
                           for _ in range(4))  # fmt: skip
            qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))

            def t_fwd():
                return F.scaled_dot_product_attention(qt, kt, vt, dropout_p=p, is_causal=True)

            tf = bench(t_fwd)
            tb = bench(lambda: torch.autograd.grad(t_fwd(), (qt, kt, vt), do)) - tf
            print(f"== B{B} H{H} L{L} D{D} dropout {p}: torch fwd {tf:.4f} bwd {tb:.4f} "
                  f"both {tf + tb:.4f} ms", flush=True)  # fmt: skip
            results = {}
            for name, heavy in (("grid order", False), ("heavy first", True)):
                attention.spec = lambda name, *a, h=heavy: (
                    h if name == "attention_heavy_first" else real(name, *a)
                )
                try:
                    fwd, bwd = ours(q, k, v, do, p)
                    fwd()
                    of = bench(fwd)
                    fwd()
                    ob = bench(bwd)
                    results[name] = [*(t.float() for t in fwd()), *(t.float() for t in bwd())]
                finally:
                    attention.spec = real
                both = of + ob
                print(f"   {name:12s} fwd {of:.4f} ({tf / of:.2f}x) bwd {ob:.4f} "
                      f"({tb / ob:.2f}x) both {both:.4f} ms ({(tf + tb) / both:.2f}x)",
                      flush=True)  # fmt: skip
            a, b = results.values()
            diff = max(float((x - y).abs().max()) for x, y in zip(a, b))
            print(f"   max |grid order - heavy first| {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
