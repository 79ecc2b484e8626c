"""Tiles, warps and stages for each attention kernel, swept on a GPU against torch's
SDPA: the measurement behind the cuda driver's `attention_kernel_tiles` (ops/attention.py
`_kernel_tiles`; the candidate None is the shared tiles of `attention_tiles`: 64x64, 4
warps, 3 stages at bf16 head 64; "best" per kernel fed the driver's choice in session 19).

For each case (the model benchmark's GPT-2 and Llama shapes, and longer ones), bf16,
causal: the forward with each "fwd" candidate, then the backward with each "dkdv"
candidate (dQ on the shared tiles) and each "dq" candidate (dK/dV on the shared tiles),
in ms, beside torch's forward and backward, each candidate's largest difference from the
shared tiles' result, and the best per kernel. A candidate that cannot launch (shared
memory) says so.

    python tests_gpu/harness/attention_tiles.py
    ATTN_CASES=8x12x12x512x64 python tests_gpu/harness/attention_tiles.py  # B x H x Hkv x L x D
    ATTN_DROPOUT=0.1      with dropout (the backward takes the driver's dQ choice,
                          `attention_dq_atomic`: the dK/dV kernel adds dQ at head 64)
    ATTN_KINDS=fwd,dkdv   the kernels to sweep (default all three)
    TUNE_DEVICE=cpu ATTN_CASES=1x2x1x40x16 ATTN_REPS=1 python ...          # interpreter dry run

Timed from CUDA graphs where the calls capture (the kernels' time, not the host's).
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torch_ext.ops import attention  # noqa: E402

CASES = [  # B, H, Hkv, L, D
    (8, 12, 12, 512, 64),  # GPT-2 124M at 8 x 512
    (8, 16, 4, 512, 64),  # bench/models' Llama (GQA)
    (8, 12, 12, 2048, 64),
    (4, 32, 8, 2048, 128),
]
CANDIDATES = {  # kind -> (BLOCK_M, BLOCK_N, warps, stages); None: the shared tiles
    "fwd": [None, (128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (64, 128, 4, 3),
            (128, 32, 4, 3), (128, 64, 8, 2), (128, 64, 8, 4), (128, 128, 8, 3),
            (64, 64, 4, 2)],
    "dkdv": [None, (32, 128, 4, 3), (64, 128, 8, 2), (64, 128, 4, 2), (32, 64, 4, 3),
             (128, 128, 8, 2), (16, 128, 4, 3), (64, 64, 8, 3), (32, 64, 8, 3),
             (32, 64, 4, 2)],
    "dq": [None, (128, 32, 4, 3), (128, 64, 8, 2), (128, 64, 4, 2), (64, 32, 4, 3),
           (128, 128, 8, 2)],
}  # fmt: skip


def bench(fn):
    if DEV == "cpu":
        fn()
        return float("nan")
    from triton.testing import do_bench, do_bench_cudagraph

    fn()
    try:
        return do_bench_cudagraph(fn, rep=int(os.environ.get("ATTN_REPS", "40")))
    except Exception:  # noqa: BLE001 -- not capturable
        torch.cuda.synchronize()
        return do_bench(fn, warmup=10, rep=int(os.environ.get("ATTN_REPS", "50")))


def with_tiles(choice, fn):
    """fn() with attention_kernel_tiles answering `choice` ({kind: tiles}; None, the
    shared tiles, for the kinds it leaves out)."""
    real = attention.spec
    attention.spec = lambda name, *a: (
        choice.get(a[0]) if name == "attention_kernel_tiles" else real(name, *a)
    )
    try:
        return fn()
    finally:
        attention.spec = real


def rel_diff(a, b):
    return max(
        (x.float() - y.float()).abs().max().item() / max(y.float().abs().max().item(), 1e-30)
        for x, y in zip(a, b)
    )


def main():
    wanted = os.environ.get("ATTN_CASES")
    cases = [tuple(map(int, c.split("x"))) for c in wanted.split(",")] if wanted else CASES
    dtype = torch.bfloat16
    p = float(os.environ.get("ATTN_DROPOUT", "0"))
    kinds = os.environ.get("ATTN_KINDS", "fwd,dkdv,dq").split(",")
    for B, H, HK, L, D in cases:
        q = torch.randn(B, L, H, D, device=DEV, dtype=dtype).transpose(1, 2)  # as models
        k = torch.randn(B, HK, L, D, device=DEV, dtype=dtype)
        v = torch.randn(B, HK, L, D, device=DEV, dtype=dtype)
        g = torch.randn(B, H, L, D, device=DEV, dtype=dtype)
        qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))

        def torch_fwd():
            return F.scaled_dot_product_attention(
                qt, kt, vt, dropout_p=p, is_causal=True, enable_gqa=HK != H
            )

        t_fwd = bench(torch_fwd)
        t_bwd = bench(lambda: torch.autograd.grad(torch_fwd(), (qt, kt, vt), g)) - t_fwd
        print(f"== B{B} H{H}/{HK} L{L} D{D} dropout {p}: torch fwd {t_fwd:.3f} ms, "
              f"bwd {t_bwd:.3f} ms")  # fmt: skip
        draw = [torch.empty((), dtype=torch.int64, device=DEV) for _ in range(2)]
        fdrop = (p, 1234, 0) if p else None
        bdrop = (p, draw[0], draw[1]) if p else None

        def fwd():
            return attention.flash_attention_fwd(q, k, v, None, True, None, fdrop, None, draw)

        def bwd():
            return attention.flash_attention_bwd(g, q, k, v, out, lse, None, True, None, bdrop)

        out, lse = fwd()
        base_bwd = bwd()
        for kind, cands in CANDIDATES.items():
            if kind not in kinds:
                continue
            best = None
            for cand in cands:
                choice = {kind: cand}
                try:
                    fn, base, t_ref = (fwd, (out, lse), t_fwd) if kind == "fwd" else (
                        bwd, base_bwd, t_bwd)  # fmt: skip
                    diff = rel_diff(with_tiles(choice, fn), base)
                    ms = bench(lambda: with_tiles(choice, fn))
                    vs = t_ref / ms
                except Exception as e:  # noqa: BLE001 -- e.g. out of shared memory
                    print(f"   {kind:5s} {str(cand):20s} fails: {str(e).splitlines()[0][:100]}")
                    continue
                print(f"   {kind:5s} {str(cand):20s} {ms:8.3f} ms  vs torch {vs:5.2f}x  "
                      f"diff {diff:.1e}", flush=True)  # fmt: skip
                if best is None or ms < best[1]:
                    best = (cand, ms)
            if best is not None:
                print(f"   best {kind}: {best[0]} at {best[1]:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
