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
    ATTN_MODES=separate,tma+desc+nat:64x64w8s2   dQ ways (`ours`), each with its largest
                              difference from "separate" over dq, dk, dv
The forward is timed by pointers and through tensor descriptors.
    ATTN_PHILOX_ROUNDS=7      the dropout mask's Philox rounds (default the kernels' 10)
    TUNE_DEVICE=cpu ATTN_CASES=1x2x1x40x16 python ...                    # an interpreter dry run
"""

import contextlib
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


MODES = os.environ.get("ATTN_MODES", "separate,atomic,tma").split(",")


def ours(mode, g, q, k, v, out, lse, dropout):
    """The backward with dQ by `mode`: "separate", "atomic" (by element), "tma" (tiles
    through a descriptor); "+desc": the operands through tensor descriptors (spec
    `attention_tma`; without it, by pointers); optionally ":MxNwWsS" (the dK/dV
    kernel's tiles, warps, stages); "+nat": the dK/dV kernel's scores as queries x keys
    (spec `attention_kv_natural`)."""
    with _spec(mode):
        return attention.flash_attention_bwd(g, q, k, v, out, lse, None, True, None, dropout)


@contextlib.contextmanager
def _spec(mode):
    real = attention.spec
    how, _, tiles = mode.partition(":")
    how, *extra = how.split("+")
    own = None
    if tiles:
        m, rest = tiles.split("x")
        n, rest = rest.split("w")
        w, st = rest.split("s")
        own = (int(m), int(n), int(w), int(st))

    def fake(name, *a):
        if name == "attention_dq_atomic":
            return how != "separate"
        if name == "attention_dq_tma":
            return how == "tma"
        if name == "attention_kernel_tiles" and own and a[0] == "dkdv":
            return own
        if name == "attention_tma":
            return "desc" in extra
        if name == "attention_kv_natural":
            return "nat" in extra
        return real(name, *a)

    attention.spec = fake
    # (the driver's own choice: `attention_dq_atomic` in backends/cuda/spec.py)
    try:
        yield
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

        def fwd(mode="separate"):
            with _spec(mode):
                return attention.flash_attention_fwd(
                    q, k, v, None, True, None, fwd_drop, None, draw
                )

        out, lse = fwd()
        drop = (p, draw[0], draw[1]) if p else None
        t_fwd = bench(fwd)
        out_d, _ = fwd("separate+desc")
        t_fwd_desc = bench(lambda: fwd("separate+desc"))
        fdiff = (out_d.float() - out.float()).abs().max().item()
        times, diffs = {}, {}
        ref = ours("separate", g, q, k, v, out, lse, drop)
        for mode in MODES:
            try:  # a mode that cannot compile or launch (out of resources) is skipped
                times[mode] = bench(lambda: ours(mode, g, q, k, v, out, lse, drop))
            except Exception as e:  # noqa: BLE001
                print(f"  {mode}: failed: {str(e).splitlines()[0][:120]}", flush=True)
                continue
            got = ours(mode, g, q, k, v, out, lse, drop)
            diffs[mode] = max(
                (a.float() - b.float()).abs().max().item()
                / max(a.float().abs().max().item(), 1e-30)
                for a, b in zip(ref, got)
            )
        qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))

        def ref_fwd():
            return F.scaled_dot_product_attention(
                qt, kt, vt, dropout_p=p, is_causal=True, enable_gqa=HK != H
            )

        t_tf = bench(lambda: ref_fwd())
        t_tfb = bench(lambda: torch.autograd.grad(ref_fwd(), (qt, kt, vt), g))
        best = min(times.values())
        each = ", ".join(f"{m} {t:.3f} (diff {diffs[m]:.1e})" for m, t in times.items())
        print(
            f"B{B} H{H}/{HK} L{L} D{D} dropout {p} (Philox {rounds} rounds): fwd {t_fwd:.3f} "
            f"ms, with descriptors {t_fwd_desc:.3f} (diff {fdiff:.1e}) (torch {t_tf:.3f}); bwd ms: {each}; torch fwd+bwd {t_tfb:.3f} (bwd "
            f"~{t_tfb - t_tf:.3f}); ours best fwd+bwd {t_fwd + best:.3f}: "
            f"{t_tfb / (t_fwd + best):.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
