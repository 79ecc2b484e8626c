"""Cross entropy's row kernel over bf16 logits (4096 x 32768, the suite's case at 83% of
copy bandwidth while its float32 case reaches 96-100%: the 16-bit rows are bound by
instructions a logit, not bytes). The shipped kernel (ops/cross_entropy.py
`_ce_rows_kernel`, launched alone: no mean) beside variants of its step:

- fold: exp2(v * log2e - m * log2e) in one FFMA instead of exp2((v - m) * log2e);
- max16: the step's maximum taken over the 16-bit logits before they are widened;
- a max-only kernel (no exponential): what reading the rows costs.

Standalone (no build): a line per variant (us, GB/s, share of copy, max abs difference
of the log-sum-exp against torch's).

    python tests_gpu/harness/ce_rows.py
    CE_BLOCKS=4096,8192 CE_WARPS=4,8 python ...
"""

import os

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import _bounds  # noqa: E402
from torch_ext.ops import cross_entropy as CE  # noqa: E402

SMOKE = DEV == "cpu"
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _ce_variant(x, lse, C, BLOCK: tl.constexpr, FOLD: tl.constexpr, MAX16: tl.constexpr,
                EXP: tl.constexpr):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    base = x + row * C
    cols = tl.arange(0, BLOCK)
    m = tl.full([1], -float("inf"), tl.float32)
    s = tl.zeros([1], tl.float32)
    for c0 in range(0, C, BLOCK):
        raw = tl.load(base + c0 + cols, mask=c0 + cols < C, other=-float("inf"))
        v = raw.to(tl.float32)
        if MAX16:
            top = tl.max(raw, 0).to(tl.float32)
        else:
            top = tl.max(v, 0)
        m_new = tl.maximum(m, top)
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        if EXP:
            if FOLD:
                ml = m_safe * LOG2E
                e = tl.exp2(v * LOG2E - ml)
                s = s * tl.exp2(m * LOG2E - ml) + tl.sum(e, 0)
            else:
                s = s * tl.exp2((m - m_safe) * LOG2E) + tl.sum(tl.exp2((v - m_safe) * LOG2E), 0)
        m = m_new
    if EXP:
        res = tl.where(m == -float("inf"), 0.0, m) + tl.log(s)
    else:
        res = m
    tl.store(lse + row + tl.arange(0, 1), res)


def main():
    bench = lambda fn: sweeps.plain_bench(fn, SMOKE)  # noqa: E731
    row = sweeps.Bandwidth(DEV, bench, width=40).row
    N, C = (64, 4096) if SMOKE else (4096, 32768)
    blocks = [int(b) for b in os.environ.get("CE_BLOCKS", "4096,8192").split(",")]
    warps_list = [int(w) for w in os.environ.get("CE_WARPS", "4,8").split(",")]
    for dt in (torch.bfloat16, torch.float16):
        torch.manual_seed(0)
        x = (torch.randn(N, C, device=DEV) * 3).to(dt)
        t = torch.randint(0, C, (N,), device=DEV)
        ref = torch.logsumexp(x.float(), 1)
        lse = torch.empty(N, device=DEV, dtype=torch.float32)
        loss = torch.empty(N, device=DEV, dtype=torch.float32)
        nbytes = x.numel() * x.element_size()
        print(f"cross entropy rows {N}x{C} {dt}", flush=True)
        flag = _bounds.new_flag(x.device, message="Target {} is out of bounds.")
        for block in blocks:
            for w in warps_list:

                def shipped():
                    CE._ce_rows_kernel[(N,)](x, t, loss, lse, C, C, -100, flag, BLOCK=block,
                                             num_warps=w)  # fmt: skip

                lse.zero_()
                ms = bench(shipped)
                d = (lse - ref).abs().max().item()
                row(f"shipped {block} w{w} diff {d:.1e}", ms, nbytes)
                for name, fold, m16, ex in (("fold", 1, 0, 1), ("fold+max16", 1, 1, 1),
                                            ("max16", 0, 1, 1), ("max only", 0, 0, 0)):  # fmt: skip

                    def run(fold=fold, m16=m16, ex=ex):
                        _ce_variant[(N,)](x, lse, C, BLOCK=block, FOLD=fold, MAX16=m16, EXP=ex,
                                          num_warps=w)  # fmt: skip

                    lse.zero_()
                    ms = bench(run)
                    d = (lse - (ref if ex else x.float().amax(1))).abs().max().item()
                    row(f"{name} {block} w{w} diff {d:.1e}", ms, nbytes)


if __name__ == "__main__":
    main()
