"""A channels_last batch norm forward as two launches over blocks of rows (session 46
probe, not in the product): the activation viewed as an (N*H*W) x C matrix; launch 1
gives each program a run of rows and a block of channels and writes per-channel partial
sums (shifted by each channel's first value, so that large means do not cancel); launch 2
merges them: the channel block's last program to arrive (an acquire-release count)
sums its partials in order and writes the statistics, the running-stat update and each
channel's scale and shift; launch 2 normalises blocks of rows. (First tried: every
program of launch 2 merging the partials itself, 1.3-4x slower than the shipped kernels:
each of its programs read all of them.) Against the shipped forward
(ops/batch_norm.py, the cuda spec's choice) and a copy of the same bytes, on ResNet-50's
batch norms at batch 32 in bf16.

Timing as tests_gpu/harness/bn_paths.py (event-timed calls behind a GPU spin). Standalone.

    python tests_gpu/harness/bn_cl_rows.py
    BN_SHAPES=512x14,2048x7 python tests_gpu/harness/bn_cl_rows.py
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import sweeps  # noqa: E402
from bn_paths import SMOKE, timed  # noqa: E402
from bench.cases_norm import BATCH, RESNET50_BN  # noqa: E402
from torch_ext.ops import batch_norm as BN  # noqa: E402


@triton.jit
def _rows_stats(x, part, count, coef, w, b, rm, rv, smean, sinv, M, C, P, per, momentum, eps,
                BR: tl.constexpr, BC: tl.constexpr, BP: tl.constexpr):  # fmt: skip
    p = tl.program_id(0)
    cb = tl.program_id(1)
    c = cb * BC + tl.arange(0, BC)
    cm = c < C
    piv = tl.load(x + c, mask=cm, other=0).to(tl.float32)
    lo = p * per
    hi = tl.minimum(lo + per, M)
    s = tl.zeros([BR, BC], tl.float32)
    q = tl.zeros([BR, BC], tl.float32)
    for r in tl.range(lo, hi, BR, num_stages=3):
        rr = r + tl.arange(0, BR)
        m = (rr < hi)[:, None] & cm[None, :]
        v = tl.load(x + rr.to(tl.int64)[:, None] * C + c[None, :], mask=m, other=0).to(tl.float32)
        d = tl.where(m, v - piv[None, :], 0)
        s += d
        q += d * d
    tl.store(part + p * C + c, tl.sum(s, 0), mask=cm)
    tl.store(part + (P + p) * C + c, tl.sum(q, 0), mask=cm)
    # the channel block's last program to arrive merges its P partials (in a fixed order)
    done = tl.atomic_add(count + cb, 1, sem="acq_rel")
    if done == P - 1:
        S = tl.zeros([BC], tl.float32)
        Q = tl.zeros([BC], tl.float32)
        for p0 in range(0, P, BP):
            pp = p0 + tl.arange(0, BP)
            pm = (pp < P)[:, None] & cm[None, :]
            S += tl.sum(
                tl.load(
                    part + pp[:, None] * C + c[None, :], mask=pm, other=0, cache_modifier=".cg"
                ),
                0,
            )
            Q += tl.sum(
                tl.load(
                    part + (P + pp)[:, None] * C + c[None, :],
                    mask=pm,
                    other=0,
                    cache_modifier=".cg",
                ),
                0,
            )
        n = M.to(tl.float32)
        ms = S / n
        var = tl.maximum(Q / n - ms * ms, 0.0)
        mean = ms + piv
        inv = 1.0 / tl.sqrt(var + eps)
        a = tl.load(w + c, mask=cm, other=0) * inv
        tl.store(coef + c, a, mask=cm)
        tl.store(coef + C + c, tl.load(b + c, mask=cm, other=0) - mean * a, mask=cm)
        tl.store(smean + c, mean, mask=cm)
        tl.store(sinv + c, inv, mask=cm)
        om = tl.load(rm + c, mask=cm, other=0)
        ov = tl.load(rv + c, mask=cm, other=0)
        tl.store(rm + c, om + momentum * (mean - om), mask=cm)
        tl.store(rv + c, ov + momentum * (var * n / (n - 1) - ov), mask=cm)
        tl.store(count + cb, 0)


@triton.jit
def _rows_apply(x, y, coef, M, C, per, BR: tl.constexpr, BC: tl.constexpr):
    p = tl.program_id(0)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    cm = c < C
    a = tl.load(coef + c, mask=cm, other=0)
    sh = tl.load(coef + C + c, mask=cm, other=0)
    lo = p * per
    hi = tl.minimum(lo + per, M)
    for r in tl.range(lo, hi, BR, num_stages=3):
        rr = r + tl.arange(0, BR)
        m = (rr < hi)[:, None] & cm[None, :]
        offs = rr.to(tl.int64)[:, None] * C + c[None, :]
        v = tl.load(x + offs, mask=m, other=0).to(tl.float32)
        tl.store(y + offs, (v * a[None, :] + sh[None, :]).to(y.dtype.element_ty), mask=m)


COUNT = {}


def rows_forward(x, w, b, rm, rv, bc, stats_per_sm, apply_per_sm, br=64, warps=8):
    """y, mean, invstd of a channels_last x through the two launches."""
    N, C = x.shape[:2]
    M = x.numel() // C
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if not SMOKE else 2
    ncb = triton.cdiv(C, bc)
    P = max(1, min(triton.cdiv(M, br), stats_per_sm * sms // ncb))
    per = triton.cdiv(triton.cdiv(M, P), br) * br
    P = triton.cdiv(M, per)
    Q = max(1, min(triton.cdiv(M, br), apply_per_sm * sms // ncb))
    per2 = triton.cdiv(triton.cdiv(M, Q), br) * br
    Q = triton.cdiv(M, per2)
    part = torch.empty(2 * P * C, device=x.device, dtype=torch.float32)
    coef = torch.empty(2 * C, device=x.device, dtype=torch.float32)
    if ncb not in COUNT or COUNT[ncb].device != x.device:
        COUNT[ncb] = torch.zeros(ncb, device=x.device, dtype=torch.int32)
    y = torch.empty_like(x)
    smean = torch.empty(C, device=x.device, dtype=torch.float32)
    sinv = torch.empty_like(smean)
    _rows_stats[(P, ncb)](x, part, COUNT[ncb], coef, w, b, rm, rv, smean, sinv, M, C, P, per,
                          0.1, 1e-5, BR=br, BC=bc, BP=32, num_warps=warps)  # fmt: skip
    _rows_apply[(Q, ncb)](x, y, coef, M, C, per2, BR=br, BC=bc, num_warps=warps)
    return y, smean, sinv


VARIANTS = [(bc, s, a) for bc in (32, 64, 128) for s in (1, 2, 4) for a in (2, 4)]
if SMOKE:
    BATCH, RESNET50_BN, VARIANTS = 2, [(16, 6)], [(16, 2, 2)]


def main():
    only = os.environ.get("BN_SHAPES")
    for c, hw in RESNET50_BN:
        if only and f"{c}x{hw}" not in only.split(","):
            continue
        ops = sweeps.bn_operands(BATCH, c, hw, torch.channels_last, DEV)
        x, dy, wt, bs, rm, rv = ops[:6]
        same = torch.empty_like(x)
        t_c = timed(lambda: same.copy_(dy))
        ref_y = torch.nn.functional.batch_norm(x.float(), None, None, wt, bs, True, 0.1, 1e-5)
        t_s = timed(lambda: BN.bn_forward(x, wt, bs, rm, rv, True, 0.1, 1e-5))
        print(f"channels_last {BATCH}x{c}x{hw}x{hw}: copy {t_c * 1e3:.1f} us; shipped "
              f"{t_s * 1e3:.1f} us ({t_c / t_s:.0%} of copy)", flush=True)  # fmt: skip
        for bc, s, a in VARIANTS:
            r1, r2 = rm.clone(), rv.clone()
            y, mean, inv = rows_forward(x, wt, bs, r1, r2, bc, s, a)
            err = (y.float() - ref_y).abs().max().item()
            var, mu = torch.var_mean(x.float(), [0, 2, 3], correction=0)
            serr = max(
                (mean - mu).abs().max().item(),
                (inv - torch.rsqrt(var + 1e-5)).abs().max().item() / inv.abs().max().item(),
            )
            t = timed(lambda: rows_forward(x, wt, bs, r1, r2, bc, s, a))
            print(f"  rows bc{bc} stats{s}/sm apply{a}/sm {t * 1e3:6.1f} us "
                  f"({t_c / t:4.0%} of copy)  err {err:.1e} stats {serr:.1e}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
