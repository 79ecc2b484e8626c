"""argmax over contiguous 16-bit rows (session 33): the kernel that keeps each lane's
extreme only and reads again the lanes holding the row's (ops/reduction_arg.py
`_arg_rescan_kernel`) against the per-lane kernel it replaces (`_arg_lanes_kernel`,
an index kept beside every value), torch's argmax and amax, and our amax's one-tile
kernel launched directly (the same bytes, one reduction: the target). Rows of random
values (one lane holds the maximum) and of few distinct values (ties in many lanes:
the masked walk). Also the per-lane kernel against its form before session 33 (each
element's take by its own compares and a select, now one NaN-propagating max and a
compare with the old extreme). Session 33 also timed an int32 key packing value and index (one
integer maximum an element): 63-85 us against the per-lane kernel's 46 (integer work
per element), not kept.

Standalone (no build); a line per variant: us, GB/s, % of a device-to-device copy, and
whether the indices equal torch's.

    python tests_gpu/harness/argmax_rescan.py
    TUNE_DEVICE=cpu python tests_gpu/harness/argmax_rescan.py   # dry run, interpreter
"""

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import reduction as R  # noqa: E402
from torch_ext.ops import reduction_arg as A  # noqa: E402

SMOKE = DEV == "cpu"


@triton.jit
def _lanes_select_kernel(x, idxs, R, ACC: tl.constexpr, BLOCK_R: tl.constexpr, NC: tl.constexpr):
    # _arg_lanes_kernel (argmax, contiguous rows) before session 33: each element's
    # take by its own compares and a select of the value (now one NaN-propagating max
    # and a compare with the old extreme).
    row = tl.program_id(0).to(tl.int64)
    lane = tl.arange(0, BLOCK_R)
    best = tl.full((BLOCK_R,), float("-inf"), ACC)
    best_r0 = tl.zeros((BLOCK_R,), tl.int32)
    for r0 in range(0, R, BLOCK_R):
        v = tl.load(x + row * R + r0 + lane, mask=r0 + lane < R, other=float("-inf")).to(ACC)
        take = (v > best) | ((v != v) & (best == best))
        best = tl.where(take, v, best)
        best_r0 = tl.where(take, r0, best_r0)
    tv = A.nan_extreme(best, True, NC)
    hit = (best == tv) | (best != best)
    tl.store(idxs + row, tl.min(tl.where(hit, best_r0 + lane, 2147483647), 0).to(tl.int64))


def bench(fn):
    return sweeps.plain_bench(fn, SMOKE)


row = sweeps.Bandwidth(DEV, bench, width=48).row


# the suite's case; an LM head's logits (greedy decoding over GPT-2's vocabulary)
SHAPES = [(16, 8192)] if SMOKE else [(8192, 8192), (64, 50257), (4096, 32000)]
NC = not SMOKE  # the cuda driver's NaN-propagating combine
for rows, cols in SHAPES:
    for dt, kind in ((torch.float16, "randn"), (torch.bfloat16, "randn"), (torch.float16, "ties"),
                     (torch.float32, "randn")):  # fmt: skip
        if kind == "ties":
            x = torch.randint(0, 4, (rows, cols), device=DEV).to(dt)
        else:
            x = torch.randn(rows, cols, device=DEV, dtype=dt)
        x[3, 10] = float("nan")
        acc = tl.float16 if dt == torch.float16 else tl.float32
        ref = torch.argmax(x, 1)
        out = torch.empty(rows, dtype=torch.int64, device=DEV)
        nbytes = x.numel() * x.element_size() + rows * 8
        print(f"argmax {rows}x{cols} {dt} {kind}", flush=True)
        row("torch argmax", bench(lambda: torch.argmax(x, 1)), nbytes)
        row("torch amax", bench(lambda: torch.amax(x, 1)), nbytes)
        amax = torch.empty(rows, dtype=dt, device=DEV)
        for br, w in ((8192, 8), (8192, 16)) if cols == 8192 else ():

            def ours_amax():
                R._reduce_kernel[(rows, 1)](
                    x, amax, amax, rows, cols, 1, cols, float("-inf"), 1.0, 1.0, OP=R.MAX,
                    POST=R.POST_NONE, ACC=acc, PARTIAL=False, ONE_TILE=True,
                    NAN_COMBINE=NC, BLOCK_O=1, BLOCK_R=br, num_warps=w,
                )  # fmt: skip

            row(f"ours amax one tile {br} w{w}", bench(ours_amax), nbytes)

        def lanes():
            A._arg_lanes_kernel[(rows,)](
                x, out, out, rows, cols, 1, float("-inf"), IS_MAX=True, VALUES=False,
                ACC=acc, BLOCK_O=1, BLOCK_R=1024, NAN_COMBINE=NC, num_warps=4,
            )  # fmt: skip

        out.fill_(-1)
        ms = bench(lanes)
        row(f"lanes 1024 w4 ok={torch.equal(out, ref)}", ms, nbytes)
        out.fill_(-1)
        ms = bench(
            lambda: _lanes_select_kernel[(rows,)](
                x, out, cols, ACC=acc, BLOCK_R=1024, NC=NC, num_warps=4
            )
        )
        row(f"lanes before session 33, 1024 w4 ok={torch.equal(out, ref)}", ms, nbytes)
        for br, w in ((1024, 8), (2048, 4), (2048, 8)):
            out.fill_(-1)
            ms = bench(lambda: A._arg_lanes_kernel[(rows,)](
                x, out, out, rows, cols, 1, float("-inf"), IS_MAX=True, VALUES=False,
                ACC=acc, BLOCK_O=1, BLOCK_R=br, NAN_COMBINE=NC, num_warps=w))  # fmt: skip
            row(f"lanes {br} w{w} ok={torch.equal(out, ref)}", ms, nbytes)
        for br in (1024, 2048, 4096, 8192) if rows < 132 else ():
            for w in (2, 4, 8, 16):
                if br // (32 * w) < 4 or br // (32 * w) > 32:
                    continue

                def rescan():
                    A._arg_rescan_kernel[(rows,)](
                        x, out, out, cols, float("-inf"), IS_MAX=True, VALUES=False,
                        ACC=acc, BLOCK_R=br, NAN_COMBINE=NC, num_warps=w,
                    )  # fmt: skip

                out.fill_(-1)
                ms = bench(rescan)
                row(f"rescan {br} w{w} ok={torch.equal(out, ref)}", ms, nbytes)
        idx = torch.empty(rows, dtype=torch.int64, device=DEV)
        row("* shipped (argmax_out)", bench(lambda: A.argmax_out(x, 1, False, idx)), nbytes)
        print(f"    ok={torch.equal(idx, ref)}", flush=True)
