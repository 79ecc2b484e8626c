"""The attention backward's two ways of computing dQ (ops/attention.py), timed on a GPU
against torch's SDPA backward: dQ in its own kernel (each query tile loops over the keys
again: deterministic, the default), or added atomically in float32 by the dK/dV kernel
(backends/cuda/spec.py `attention_dq_atomic`). Used to choose that default.

Runs the kernels on torch.cuda tensors (no torch_ext._C needed, as tune_mm.py does), for
the attention shapes of the model benchmark (GPT-2 and the Llama config) and issue 15's
long sequences, bf16, causal; prints per case ms of each way, torch's, and the largest
difference between the two ways' dQ.

    python tests_gpu/harness/attention_dq.py
    ATTN_CASES=8x12x12x512x64 python tests_gpu/harness/attention_dq.py   # B x H x Hkv x L x D
    TUNE_DEVICE=cpu ATTN_CASES=1x2x1x40x16 python ...                    # an interpreter dry run
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
    (1, 32, 8, 8192, 128),
]


def bench(fn):
    if DEV == "cpu":
        fn()
        return float("nan")
    from triton.testing import do_bench

    return do_bench(fn, warmup=10, rep=50)


def ours(atomic, g, q, k, v, out, lse):
    real = attention.spec
    attention.spec = lambda name, *a: atomic if name == "attention_dq_atomic" else real(name, *a)
    try:
        return attention.flash_attention_bwd(g, q, k, v, out, lse, None, True)
    finally:
        attention.spec = real


def main():
    wanted = os.environ.get("ATTN_CASES")
    cases = [tuple(map(int, c.split("x"))) for c in wanted.split(",")] if wanted else CASES
    dtype = torch.bfloat16
    for B, H, HK, L, D in cases:
        # (B, L, H, D) storage seen as (B, H, L, D), as models lay q out
        q = torch.randn(B, L, H, D, device=DEV, dtype=dtype).transpose(1, 2)
        k = torch.randn(B, HK, L, D, device=DEV, dtype=dtype)
        v = torch.randn(B, HK, L, D, device=DEV, dtype=dtype)
        g = torch.randn(B, H, L, D, device=DEV, dtype=dtype)
        out, lse = attention.flash_attention_fwd(q, k, v, None, True)
        sep = bench(lambda: ours(False, g, q, k, v, out, lse))
        atom = bench(lambda: ours(True, g, q, k, v, out, lse))
        dq_s = ours(False, g, q, k, v, out, lse)[0].float()
        dq_a = ours(True, g, q, k, v, out, lse)[0].float()
        diff = (dq_s - dq_a).abs().max().item() / max(dq_s.abs().max().item(), 1e-30)
        qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))
        ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=HK != H)
        torch_ms = bench(lambda: torch.autograd.grad(ref, (qt, kt, vt), g, retain_graph=True))
        print(
            f"B{B} H{H}/{HK} L{L} D{D}: separate dQ {sep:.3f} ms, atomic dQ {atom:.3f} ms, "
            f"torch {torch_ms:.3f} ms; atomic vs separate {sep / atom:.2f}x, "
            f"vs torch {torch_ms / atom:.2f}x; dQ difference {diff:.1e} of its max",
            flush=True,
        )


if __name__ == "__main__":
    main()
