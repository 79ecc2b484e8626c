"""Round 4 of the memory-bound sweeps (session 24): the row kernels issue 15 still misses,
with per-lane running state instead of a cross-thread reduction in every step.

- argmax: the shipped one-tile kernel (ops/reduction_arg.py `_arg_kernel`, two
  reductions over the whole row) against `_arg_lanes_kernel` (each element keeps its
  lane's running winner across steps; two reductions at the end) by step and warps.
- argmax also in two passes: the row's maximum as amax takes it, then the first
  step that holds it, read again from L2 (not in the product: on an H200 in session 25
  no faster than the per-lane kernel, 46.6 us in fp16 for both, 50.4 against 46.2 in bf16).
- cross entropy: the shipped rows kernel (a maximum and a sum reduced every step)
  against a per-lane online log-sum-exp with one exponential an element: d = v - m,
  e = exp(-|d|), s = d > 0 ? s * e + 1 : s + e.
- softmax: the shipped one-tile kernel by warps and rows a program, and with the loads
  marked evict-first, beside FlagGems' softmax when it is installed.

Standalone (no build). A line per variant: us, GB/s, % of copy, check.

    python tests_gpu/harness/sweep_lanes.py [argmax,ce,softmax]
"""

import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import _math  # noqa: E402
from torch_ext.ops import cross_entropy as CE  # noqa: E402
from torch_ext.ops import reduction_arg as A  # noqa: E402
from torch_ext.ops._rows import row_tile  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "argmax,ce,softmax").split(","))
SMOKE = DEV == "cpu"  # a dry run under the interpreter: small shapes, one timing


def bench(fn):
    return sweeps.plain_bench(fn, SMOKE)


row = sweeps.Bandwidth(DEV, bench, width=52).row


ROWS, COLS = (64, 4096) if SMOKE else (8192, 8192)


@triton.jit
def _argmax_two_pass_kernel(x, idxs, R, ACC: tl.constexpr, STEP: tl.constexpr,
                            NAN_COMBINE: tl.constexpr):  # fmt: skip
    # A row a program: its maximum by a per-lane NaN-propagating max over the steps (as
    # amax: one packed max.NaN per two fp16 values on a GPU), then a second walk from
    # the row's start, in L2 since the first, that stops at the first step holding it.
    row = tl.program_id(0).to(tl.int64)
    base = x + row * R
    j = tl.arange(0, STEP)
    acc = tl.full([STEP], float("-inf"), ACC)
    for r0 in range(0, R, STEP):
        v = tl.load(base + r0 + j, mask=r0 + j < R, other=float("-inf")).to(ACC)
        if NAN_COMBINE:
            acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)
        else:
            acc = tl.where((v > acc) | (v != v), v, acc)
    mx = A.nan_extreme(acc[:, None], True, NAN_COMBINE)
    is_nan = mx != mx
    found = R
    r0 = 0
    while (found == R) & (r0 < R):
        v = tl.load(base + r0 + j, mask=r0 + j < R, other=float("-inf")).to(ACC)
        hit = ((v == mx) | ((v != v) & is_nan)) & (r0 + j < R)
        first = tl.min(tl.where(hit, r0 + j, R), 0)
        found = tl.minimum(found, first)
        r0 += STEP
    tl.store(idxs + row, found.to(tl.int64))


if "argmax" in WHICH:
    for dt, acc in (
        (torch.float16, tl.float16),
        (torch.bfloat16, tl.float32),
        (torch.float32, tl.float32),
    ):
        x = torch.randn(ROWS, COLS, device=DEV, dtype=dt)
        x[3, 100] = float("nan")
        out = torch.empty(ROWS, dtype=torch.int64, device=DEV)
        ref = torch.argmax(x, 1)
        nbytes = x.numel() * x.element_size() + ROWS * 8
        print(f"argmax {ROWS}x{COLS} {dt}", flush=True)
        row("torch", bench(lambda: torch.argmax(x, 1)), nbytes)
        bo, br, warps = row_tile(ROWS, COLS, 1, arrays=2)

        def shipped():
            A._arg_kernel[(triton.cdiv(ROWS, bo),)](
                x, out, out, ROWS, COLS, 1, float("-inf"), IS_MAX=True, VALUES=False,
                ACC=acc, BLOCK_O=bo, BLOCK_R=br, NAN_COMBINE=not SMOKE, num_warps=warps,
            )  # fmt: skip

        ms = bench(shipped)
        row(f"* shipped ({bo} rows, {br}, {warps} warps) ok={torch.equal(out, ref)}", ms, nbytes)
        for step in (1024, 2048, 4096, 8192):
            # (call 1 of session 24 also pipelined the steps, 2-3 stages: none gained)
            for warps in (2, 4, 8, 16):
                if step // (32 * warps) < 4 or step > COLS:
                    continue

                def lanes():
                    A._arg_lanes_kernel[(ROWS,)](
                        x, out, out, ROWS, COLS, 1, float("-inf"), IS_MAX=True,
                        VALUES=False, ACC=acc, BLOCK_O=1, BLOCK_R=step,
                        NAN_COMBINE=not SMOKE, num_warps=warps,
                    )  # fmt: skip

                out.fill_(-1)
                ms = bench(lanes)
                row(f"lanes step {step} w{warps} ok={torch.equal(out, ref)}", ms, nbytes)
        for step, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 8)):
            if step > COLS:
                continue

            def two_pass():
                _argmax_two_pass_kernel[(ROWS,)](
                    x, out, COLS, ACC=acc, STEP=step, NAN_COMBINE=not SMOKE, num_warps=warps
                )

            out.fill_(-1)
            ms = bench(two_pass)
            row(f"two passes step {step} w{warps} ok={torch.equal(out, ref)}", ms, nbytes)


@triton.jit
def _ce_lanes_kernel(x, lse, C, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # per-lane online log-sum-exp, base 2: one exponential an element
    row = tl.program_id(0).to(tl.int64)
    base = x + row * C
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for c0 in tl.range(0, C, BLOCK, num_stages=STAGES):
        v = tl.load(base + c0 + cols, mask=c0 + cols < C, other=-float("inf"))
        v = v.to(tl.float32) * 1.4426950408889634
        d = v - m
        e = tl.where(v == -float("inf"), 0.0, tl.exp2(-tl.abs(d)))
        s = tl.where(d > 0, s * e + 1.0, s + e)
        m = tl.maximum(m, v)
    mx = tl.max(m, 0)
    mx_safe = tl.where(mx == -float("inf"), 0.0, mx)
    tot = tl.sum(s * tl.exp2(m - mx_safe), 0)
    res = (mx_safe + tl.log2(tot)) * 0.6931471805599453
    tl.store(lse + row + tl.arange(0, 1), res + tl.zeros([1], tl.float32))


if "ce" in WHICH:
    Nr, C = (64, 32768) if SMOKE else (4096, 32768)
    for dt in (torch.bfloat16, torch.float32):
        x = torch.randn(Nr, C, device=DEV, dtype=dt) * 4
        t = torch.randint(0, C, (Nr,), device=DEV)
        rows = torch.empty(Nr, device=DEV)
        lse = torch.empty(Nr, device=DEV)
        flag = torch.zeros(4, dtype=torch.int64, device=DEV)
        nbytes = x.numel() * x.element_size()
        ref = torch.logsumexp(x.float(), 1)
        print(f"cross_entropy rows {Nr}x{C} {dt}", flush=True)
        ms = bench(lambda: CE._ce_rows_kernel[(Nr,)](x, t, rows, lse, C, C, -100, flag, BLOCK=CE._block(C, x.element_size())))  # fmt: skip
        row(f"* shipped rows kernel err {(lse - ref).abs().max().item():.1e}", ms, nbytes)
        # (call 2 of session 24 also swept 1-4 pipeline stages of this loop: none gained)
        for block, warps in ((b, w) for b in (2048, 4096, 8192) for w in (4, 8)):
            lse.zero_()
            ms = bench(lambda: CE._ce_rows_kernel[(Nr,)](x, t, rows, lse, C, C, -100, flag, BLOCK=block, num_warps=warps))  # fmt: skip
            err = (lse - ref).abs().max().item()
            row(f"rows kernel BLOCK {block} w{warps} err {err:.1e}", ms, nbytes)
        if "ce_lanes" not in WHICH:
            continue
        for block in (1024, 2048, 4096, 8192):
            for warps, stages in ((w, st) for w in (2, 4, 8, 16) for st in (1, 3)):
                if block // (32 * warps) < 4:
                    continue
                lse.zero_()
                ms = bench(lambda: _ce_lanes_kernel[(Nr,)](x, lse, C, BLOCK=block, STAGES=stages, num_warps=warps))  # fmt: skip
                err = (lse - ref).abs().max().item()
                row(f"lanes BLOCK {block} w{warps} s{stages} err {err:.1e}", ms, nbytes)


@triton.jit
def _softmax_rows_kernel(x, y, O, R, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr,
                         EVICT: tl.constexpr):  # fmt: skip
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    r = tl.arange(0, BLOCK_R)
    offs = o[:, None] * R + r[None, :]
    mask = (o < O)[:, None] & (r < R)[None, :]
    if EVICT:
        v = tl.load(x + offs, mask=mask, other=-float("inf"), eviction_policy="evict_first")
    else:
        v = tl.load(x + offs, mask=mask, other=-float("inf"))
    v = v.to(tl.float32)
    m = tl.max(v, 1)
    e = _math.exp_ftz(v - m[:, None])
    out = e * (1.0 / tl.sum(e, 1))[:, None]
    if EVICT:
        tl.store(y + offs, out.to(y.dtype.element_ty), mask=mask, cache_modifier=".cs")
    else:
        tl.store(y + offs, out.to(y.dtype.element_ty), mask=mask)


if "softmax" in WHICH:
    for dt in (torch.float16, torch.bfloat16):
        x, y, ref, nbytes = sweeps.softmax_lines(ROWS, COLS, dt, DEV, row, bench)
        for evict in (False, True):
            for bo in (1, 2):
                for warps in (4, 8, 16):

                    def run():
                        _softmax_rows_kernel[(triton.cdiv(ROWS, bo),)](
                            x, y, ROWS, COLS, BLOCK_O=bo, BLOCK_R=COLS, EVICT=evict,
                            num_warps=warps,
                        )  # fmt: skip

                    y.zero_()
                    ms = bench(run)
                    err = (y.float() - ref).abs().max().item()
                    row(f"rows {bo} w{warps} evict {evict} err {err:.1e}", ms, nbytes)
