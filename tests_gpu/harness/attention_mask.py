"""The attention's dropout mask drawn again by the backward or kept by the forward
(ops/attention.py `keeps_dropout_mask`, attention_common._keep), each kernel timed on a GPU:
the forward drawing or drawing and keeping, the backward drawing (with the cuda driver's
choices for a drawn mask) or reading the kept mask (with its choices for no draw, and
with the drawn mask's choices), and each kernel's own time (sweeps.profile_kernels).

    python tests_gpu/harness/attention_mask.py
    MASK_CASES=8x12x2048x64,8x32x2048x128   B x H x L x D (bf16, causal, dropout 0.1)
    MASK_FWD_ONLY=1     the forwards only
    TUNE_DEVICE=cpu MASK_CASES=1x2x64x16 python ...   # an interpreter dry run
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from attention_dq import bench  # noqa: E402
from sweeps import profile_kernels  # noqa: E402
from torch_ext.ops import attention  # noqa: E402

P = 0.1


def _spec_as(drawn):
    """attention.spec answering the backward's kernel choices as for a drawn mask (or
    for none), whatever the call asks."""
    real = attention.spec

    def spec(name, *a):
        if name == "attention_dq_atomic":
            return real(name, a[0], a[1], drawn, a[3])
        if name == "attention_kv_natural":
            return real(name, a[0], a[1], drawn)
        return real(name, *a)

    return spec


def main():
    cases = os.environ.get("MASK_CASES", "8x12x2048x64,8x32x2048x128")
    real_spec = attention.spec
    for case in cases.split(","):
        B, H, L, D = (int(x) for x in case.split("x"))
        g = torch.Generator(device=DEV).manual_seed(0)
        q, k, v, do = (
            torch.randn(B, H, L, D, device=DEV, generator=g, dtype=torch.bfloat16) for _ in range(4)
        )
        seed_t, off_t = (torch.zeros((), dtype=torch.int64, device=DEV) for _ in range(2))
        nbytes = attention._kept_bytes(B, H, L, L)
        bits = torch.zeros((nbytes + 7) // 8, dtype=torch.int64, device=DEV)
        fwd = (P, 1234, 5678)

        def f_draw():
            return attention.flash_attention_fwd(
                q, k, v, None, True, None, fwd, None, (seed_t, off_t)
            )

        def f_keep():
            return attention.flash_attention_fwd(
                q, k, v, None, True, None, fwd, None, (seed_t, bits[0]), bits
            )

        out, lse = f_keep()
        out2, lse2 = f_draw()
        same_fwd = torch.equal(out, out2) and torch.equal(lse, lse2)

        def b_draw():
            return attention.flash_attention_bwd(
                do, q, k, v, out, lse, None, True, None, (P, seed_t, off_t)
            )

        def b_kept():
            return attention.flash_attention_bwd(
                do, q, k, v, out, lse, None, True, None, (P, seed_t, bits[0]), bits[0]
            )

        rows = [
            ("fwd draw", f_draw),
            ("fwd draw+keep", f_keep),
            ("bwd draw", b_draw),
            ("bwd kept", b_kept),
        ]
        if os.environ.get("MASK_FWD_ONLY"):
            for name, fn in rows[:2]:
                print(f"{case} {name}: {bench(fn):.4f} ms", flush=True)
            continue
        res = {}
        for name, fn in rows:
            res[name] = bench(fn)
            print(f"{case} {name}: {res[name]:.4f} ms", flush=True)
            if DEV != "cpu":
                profile_kernels(name, fn)
        attention.spec = _spec_as(True)
        t = bench(b_kept)
        print(f"{case} bwd kept, drawn mask's kernels: {t:.4f} ms", flush=True)
        if DEV != "cpu":
            profile_kernels("bwd kept, drawn mask's kernels", b_kept)
        attention.spec = real_spec
        a, b = b_draw(), b_kept()
        err = max(float((x.float() - y.float()).abs().max()) for x, y in zip(a, b))
        print(f"{case} fwd same: {same_fwd}; bwd max |drawn - kept| {err:.2e}", flush=True)


if __name__ == "__main__":
    main()
