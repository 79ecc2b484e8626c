"""The row kernels at the suite's large shapes where issue 15's memory-bound targets sit
within a few points (softmax and rms_norm fp16 8192 x 8192 beside FlagGems, cross
entropy bf16 4096 x 32768 at 83-85% of copy): the shipped kernels against variants that
load the next row (or the next step of a row) before reducing this one, so that a
program's loads stay in flight across its reductions and stores:

- softmax / rms_norm: a persistent grid (programs = multiprocessors x PER_SM), each
  walking rows NPROG apart, the next row's load issued first;
- cross entropy: the shipped one-row program with the next step's load issued first.

Standalone (no build). A line per variant: us, GB/s, % of copy, and the check against
torch (max abs difference).

    python tests_gpu/harness/rows_prefetch.py [softmax,rms,ce]
"""

import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import _math  # noqa: E402
from torch_ext.ops import cross_entropy as CE  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "softmax,rms,ce").split(","))
SMOKE = DEV == "cpu"


def bench(fn):
    return sweeps.plain_bench(fn, SMOKE)


row = sweeps.Bandwidth(DEV, bench, width=44).row


SMS = 4 if SMOKE else torch.cuda.get_device_properties(0).multi_processor_count


@triton.jit
def _softmax_next_kernel(x, y, O, R, NPROG, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    c = tl.arange(0, BLOCK_R)
    cm = c < R
    v = tl.load(x + pid.to(tl.int64) * R + c, mask=c < tl.where(pid < O, R, 0), other=-float("inf"))
    for r in range(pid, O, NPROG):
        r = pid.to(tl.int64) + (r - pid)  # int64 (and a tensor under the interpreter)
        nxt = r + NPROG
        vn = tl.load(x + nxt * R + c, mask=c < tl.where(nxt < O, R, 0), other=-float("inf"))
        f = v.to(tl.float32)
        m = tl.max(f, 0)
        e = _math.exp_ftz(f - m)
        out = e * (1.0 / tl.sum(e, 0))
        tl.store(y + r * R + c, out.to(y.dtype.element_ty), mask=cm)
        v = vn


@triton.jit
def _rms_next_kernel(x, w, y, rstd_out, O, R, eps, NPROG, BLOCK_R: tl.constexpr):
    pid = tl.program_id(0)
    c = tl.arange(0, BLOCK_R)
    cm = c < R
    wv = tl.load(w + c, mask=cm, other=0).to(tl.float32)
    v = tl.load(x + pid.to(tl.int64) * R + c, mask=c < tl.where(pid < O, R, 0), other=0)
    for r in range(pid, O, NPROG):
        r = pid.to(tl.int64) + (r - pid)  # int64 (and a tensor under the interpreter)
        nxt = r + NPROG
        vn = tl.load(x + nxt * R + c, mask=c < tl.where(nxt < O, R, 0), other=0)
        f = v.to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(f * f, 0) / R + eps)
        tl.store(rstd_out + r, rstd)
        tl.store(y + r * R + c, (f * rstd * wv).to(y.dtype.element_ty), mask=cm)
        v = vn


@triton.jit
def _ce_next_kernel(x, lse, C, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x + row * C
    cols = tl.arange(0, BLOCK)
    m = tl.full([1], -float("inf"), tl.float32)
    s = tl.zeros([1], tl.float32)
    v = tl.load(base + cols, mask=cols < C, other=-float("inf"))
    for c0 in range(0, C, BLOCK):
        nc = c0 + BLOCK + cols
        vn = tl.load(base + nc, mask=nc < C, other=-float("inf"))
        f = v.to(tl.float32)
        m_new = tl.maximum(m, tl.max(f, 0))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * _math.exp_ftz(m - m_safe) + tl.sum(_math.exp_ftz(f - m_safe), 0)
        m = m_new
        v = vn
    res = tl.where(m == -float("inf"), 0.0, m) + tl.log(s)
    tl.store(lse + row + tl.arange(0, 1), res)


ROWS, COLS = (64, 1024) if SMOKE else (8192, 8192)
if "softmax" in WHICH:
    for dt in (torch.float16, torch.bfloat16):
        x, y, ref, nbytes = sweeps.softmax_lines(ROWS, COLS, dt, DEV, row, bench)
        for per_sm in (2, 4, 8):
            for warps in (8, 16):
                n = SMS * per_sm

                def run():
                    _softmax_next_kernel[(n,)](x, y, ROWS, COLS, n, BLOCK_R=COLS,
                                               num_warps=warps)  # fmt: skip

                y.zero_()
                ms = bench(run)
                d = (y.float() - ref).abs().max().item()
                row(f"next row {per_sm}/SM w{warps} diff {d:.1e}", ms, nbytes)

if "rms" in WHICH:
    x, w, y, rstd, ref, nbytes, eps = sweeps.rms_lines(ROWS, COLS, DEV, row, bench)
    for per_sm in (2, 4, 8):
        for warps in (8, 16):
            n = SMS * per_sm

            def run():
                _rms_next_kernel[(n,)](x, w, y, rstd, ROWS, COLS, eps, n, BLOCK_R=COLS,
                                       num_warps=warps)  # fmt: skip

            y.zero_()
            ms = bench(run)
            row(f"next row {per_sm}/SM w{warps} diff {(y.float() - ref).abs().max().item():.1e}",
                ms, nbytes)  # fmt: skip

if "ce" in WHICH:
    N, C = (64, 4096) if SMOKE else (4096, 32768)
    for dt in (torch.bfloat16, torch.float32):
        x = torch.randn(N, C, device=DEV, dtype=dt)
        t = torch.randint(0, C, (N,), device=DEV)
        lse = torch.empty(N, device=DEV, dtype=torch.float32)
        ref = torch.logsumexp(x.float(), 1)
        nbytes = x.numel() * x.element_size()
        print(f"cross entropy {N}x{C} {dt}", flush=True)
        row("torch", bench(lambda: F.cross_entropy(x, t)), nbytes)
        ms = bench(lambda: CE.cross_entropy_fwd(x, t, 1, -100))
        row("* shipped (rows + mean)", ms, nbytes)
        for block in (2048, 4096, 8192):
            for warps in (4, 8, 16):
                if block // (32 * warps) < 8:
                    continue

                def run():
                    _ce_next_kernel[(N,)](x, lse, C, BLOCK=block, num_warps=warps)

                lse.zero_()
                ms = bench(run)
                d = (lse - ref).abs().max().item()
                row(f"next step {block} w{warps} diff {d:.1e}", ms, nbytes)
