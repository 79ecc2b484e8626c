"""The attention backward's two ways of computing dQ (ops/attention.py), timed on a GPU
against torch's SDPA backward: dQ in its own kernel (each query tile loops over the keys
again: deterministic, the default), or added atomically in float32 by the dK/dV kernel
(backends/cuda/spec.py `attention_dq_atomic`). Used to choose that default.

Runs the kernels on torch.cuda tensors (no torch_ext._C needed, as tune_mm.py does), for
the attention shapes of the model benchmark (GPT-2 and the Llama config) and issue 15's
long sequences, bf16, causal, without and with dropout; prints per case the forward's ms
and each backward's, torch's (its default SDPA choice), and the largest difference
between the two ways' dQ.

    python tests_gpu/harness/attention_dq.py
    ATTN_CASES=8x12x12x512x64 python tests_gpu/harness/attention_dq.py   # B x H x Hkv x L x D
    ATTN_DROPOUT=0,0.1        dropout rates (default both)
    ATTN_PHILOX_ROUNDS=7      the dropout mask's Philox rounds (default the kernels' 10)
    TUNE_DEVICE=cpu ATTN_CASES=1x2x1x40x16 python ...                    # an interpreter dry run
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torch_ext.ops import attention, attention_common  # noqa: E402

if os.environ.get("ATTN_PHILOX_ROUNDS"):  # before any kernel compiles
    import triton.language as tl

    attention_common.PHILOX_ROUNDS = tl.constexpr(int(os.environ["ATTN_PHILOX_ROUNDS"]))

CASES = [  # B, H, Hkv, L, D: the transformer suite's (bench/transformer_cases.py), Llama's
    (8, 12, 12, 512, 64),
    (8, 12, 12, 2048, 64),
    (2, 12, 12, 8192, 64),
    (8, 32, 32, 512, 128),
    (8, 32, 32, 2048, 128),
    (2, 32, 32, 8192, 128),
    (8, 16, 4, 512, 64),  # bench/models' Llama (GQA)
]


def bench(fn):
    """ms per call, replayed from a CUDA graph where it captures (the kernels' time, not
    the host's: standalone launches run Python on every call), else plain timing."""
    if DEV == "cpu":
        fn()
        return float("nan")
    from triton.testing import do_bench, do_bench_cudagraph

    fn()
    try:
        return do_bench_cudagraph(fn, rep=40)
    except Exception:  # noqa: BLE001 -- not capturable
        torch.cuda.synchronize()
        return do_bench(fn, warmup=10, rep=50)


def ours(atomic, g, q, k, v, out, lse, dropout):
    real = attention.spec
    attention.spec = lambda name, *a: atomic if name == "attention_dq_atomic" else real(name, *a)
    # (the driver's own choice: `attention_dq_atomic` in backends/cuda/spec.py)
    try:
        return attention.flash_attention_bwd(g, q, k, v, out, lse, None, True, None, dropout)
    finally:
        attention.spec = real


def main():
    wanted = os.environ.get("ATTN_CASES")
    cases = [tuple(map(int, c.split("x"))) for c in wanted.split(",")] if wanted else CASES
    rates = [float(p) for p in os.environ.get("ATTN_DROPOUT", "0,0.1").split(",")]
    rounds = attention_common.PHILOX_ROUNDS.value
    dtype = torch.bfloat16
    for (B, H, HK, L, D), p in ((c, p) for c in cases for p in rates):
        # (B, L, H, D) storage seen as (B, H, L, D), as models lay q out
        q = torch.randn(B, L, H, D, device=DEV, dtype=dtype).transpose(1, 2)
        k = torch.randn(B, HK, L, D, device=DEV, dtype=dtype)
        v = torch.randn(B, HK, L, D, device=DEV, dtype=dtype)
        g = torch.randn(B, H, L, D, device=DEV, dtype=dtype)
        draw = [torch.empty((), dtype=torch.int64, device=DEV) for _ in range(2)]
        fwd_drop = (p, 1234, 0) if p else None

        def fwd():
            return attention.flash_attention_fwd(q, k, v, None, True, None, fwd_drop, None, draw)

        out, lse = fwd()
        drop = (p, draw[0], draw[1]) if p else None
        t_fwd = bench(fwd)
        sep = bench(lambda: ours(False, g, q, k, v, out, lse, drop))
        atom = bench(lambda: ours(True, g, q, k, v, out, lse, drop))
        dq_s = ours(False, g, q, k, v, out, lse, drop)[0].float()
        dq_a = ours(True, g, q, k, v, out, lse, drop)[0].float()
        diff = (dq_s - dq_a).abs().max().item() / max(dq_s.abs().max().item(), 1e-30)
        qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))

        def ref_fwd():
            return F.scaled_dot_product_attention(
                qt, kt, vt, dropout_p=p, is_causal=True, enable_gqa=HK != H
            )

        t_tf = bench(lambda: ref_fwd())
        t_tfb = bench(lambda: torch.autograd.grad(ref_fwd(), (qt, kt, vt), g))
        best = sep if sep <= atom else atom
        print(
            f"B{B} H{H}/{HK} L{L} D{D} dropout {p} (Philox {rounds} rounds): fwd {t_fwd:.3f} "
            f"ms (torch {t_tf:.3f}); bwd separate dQ {sep:.3f} ms, atomic dQ {atom:.3f} ms "
            f"(atomic vs separate {sep / atom:.2f}x); fwd+bwd {t_fwd + best:.3f} ms vs torch "
            f"{t_tfb:.3f}: {t_tfb / (t_fwd + best):.2f}x; dQ difference {diff:.1e} of its max",
            flush=True,
        )


if __name__ == "__main__":
    main()
