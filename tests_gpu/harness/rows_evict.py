"""The one-pass softmax and RMS norm forward at the suite's 8192 x 8192 (fp16, bf16), where
issue 15's "1.0x FlagGems each" sits within two points, with cache hints on their
loads and stores: the input is read once and the output written once, so neither needs
to stay in L2 (`evict_first`), and a store may stream past it (`.cs`). Each variant is
the shipped kernel's arithmetic (one row a program, _math.exp_diff) with the hints and
warps of its name, beside torch, FlagGems and the shipped kernel.

Standalone (no build). A line per variant: us, GB/s, % of copy (sweeps.Bandwidth), and
its largest difference from the float32 reference.

    python tests_gpu/harness/rows_evict.py [softmax,rms]
    TUNE_DEVICE=cpu python tests_gpu/harness/rows_evict.py   # an interpreter dry run
"""

import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import _math  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "softmax,rms").split(","))
SMOKE = DEV == "cpu"
ROWS, COLS = (64, 1024) if SMOKE else (8192, 8192)
# (name, load eviction policy, store eviction policy, store cache modifier)
HINTS = [
    ("plain", "", "", ""),
    ("ld first", "evict_first", "", ""),
    ("ld first st first", "evict_first", "evict_first", ""),
    ("ld first st .cs", "evict_first", "", ".cs"),
    ("st .cs", "", "", ".cs"),
]
WARPS = (4, 8, 16)


def bench(fn):
    return sweeps.plain_bench(fn, SMOKE)


row = sweeps.Bandwidth(DEV, bench, width=44).row


@triton.jit
def _softmax_hint_kernel(x, y, R, BLOCK_R: tl.constexpr, LD: tl.constexpr, ST: tl.constexpr,
                         CM: tl.constexpr):  # fmt: skip
    r = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_R)
    v = tl.load(x + r * R + c, mask=c < R, other=-float("inf"), eviction_policy=LD)
    f = v.to(tl.float32)
    m = tl.max(f, 0)
    e = _math.exp_diff(f, m, x)
    out = e * (1.0 / tl.sum(e, 0))
    tl.store(y + r * R + c, out.to(y.dtype.element_ty), mask=c < R, eviction_policy=ST,
             cache_modifier=CM)  # fmt: skip


@triton.jit
def _rms_hint_kernel(x, w, y, rstd_out, R, eps, BLOCK_R: tl.constexpr, LD: tl.constexpr,
                     ST: tl.constexpr, CM: tl.constexpr):  # fmt: skip
    r = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_R)
    wv = tl.load(w + c, mask=c < R, other=0).to(tl.float32)
    f = tl.load(x + r * R + c, mask=c < R, other=0, eviction_policy=LD).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(f * f, 0) / R + eps)
    tl.store(rstd_out + r, rstd)
    tl.store(y + r * R + c, (f * rstd * wv).to(y.dtype.element_ty), mask=c < R,
             eviction_policy=ST, cache_modifier=CM)  # fmt: skip


def variants(run, y, ref, nbytes):
    for name, ld, st, cm in HINTS:
        for warps in WARPS:
            y.zero_()

            def fn():
                run(ld, st, cm, warps)

            ms = bench(fn)
            row(f"{name} w{warps} diff {(y.float() - ref).abs().max().item():.1e}", ms, nbytes)


if "softmax" in WHICH:
    for dt in (torch.float16, torch.bfloat16):
        x, y, ref, nbytes = sweeps.softmax_lines(ROWS, COLS, dt, DEV, row, bench)
        variants(
            lambda ld, st, cm, w: _softmax_hint_kernel[(ROWS,)](
                x, y, COLS, BLOCK_R=COLS, LD=ld, ST=st, CM=cm, num_warps=w
            ),
            y,
            ref,
            nbytes,
        )

if "rms" in WHICH:
    x, w, y, rstd, ref, nbytes, eps = sweeps.rms_lines(ROWS, COLS, DEV, row, bench)
    variants(
        lambda ld, st, cm, wp: _rms_hint_kernel[(ROWS,)](
            x, w, y, rstd, COLS, eps, BLOCK_R=COLS, LD=ld, ST=st, CM=cm, num_warps=wp
        ),
        y,
        ref,
        nbytes,
    )
