"""What bounds batch norm's statistics pass (`_welford_items`: the split reduction's and
the one-launch kernels' first pass) on ResNet-50's large maps, where it reads at about
half the copy bandwidth: the shipped per-lane Welford loop beside

- shifted: per-lane sums of (x - K) and (x - K)**2, K the lane's first value (three
  instructions an element instead of Welford's seven),
- sum: the loads and one add an element (statistics wrong: the reading alone),

each patched into batch_norm_kernels before anything compiles (one process a variant),
timed as bn_paths.py times the forward (the normalise launch is the same in all).

    python tests_gpu/harness/bn_stats_probe.py              # runs each variant
    BN_PROBE=shifted BN_SHAPES=64x112 python ...            # one variant in-process
    BN_TILINGS=16384:2:8:4,8192:4:8:6 python ...            # two-launch tilings too
"""

import os
import subprocess
import sys

import standalone  # noqa: F401  (first: torch_ext's kernels without its extension)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from torch_ext.ops import batch_norm_kernels as K  # noqa: E402

VARIANTS = ("welford", "shifted", "sum")


@triton.jit
def _shifted_items(x, start, end, c, cm, jn, js, offs, TN, N, S, sN, sS, TS, items, full,
                   full_nv, tail_nv, ACC: tl.constexpr, I64: tl.constexpr, BN: tl.constexpr,
                   BS: tl.constexpr, ST: tl.constexpr):  # fmt: skip
    BC: tl.constexpr = c.shape[0]
    n0, s0, rm = K._item(start, TN, N, S, jn, js, BN, BS)
    m = cm[:, None] & rm[None, :]
    k_raw = tl.load(x + K._base(n0, s0, sN, sS, I64) + offs, mask=m, other=0)
    kf = k_raw.to(ACC)
    s1 = tl.zeros((BC, BN * BS), ACC)
    s2 = tl.zeros((BC, BN * BS), ACC)
    for it in tl.range(start, end, num_stages=ST):
        n0, s0, rm = K._item(it, TN, N, S, jn, js, BN, BS)
        m = cm[:, None] & rm[None, :]
        d = tl.load(x + K._base(n0, s0, sN, sS, I64) + offs, mask=m, other=k_raw).to(ACC) - kf
        s1 += d
        s2 += d * d
    cnt = K._lane_counts(jn, js, N, S, TN, TS, items, start, end, BN, BS).to(ACC)[None, :]
    inv = 1.0 / tl.maximum(cnt, 1.0)
    mean = kf + s1 * inv
    m2 = s2 - s1 * s1 * inv
    n = K._count(start, end, full, full_nv, tail_nv, ACC)
    pmean = tl.sum(mean * cnt, 1) / n
    dm = mean - pmean[:, None]
    return n, pmean, tl.sum(m2 + cnt * dm * dm, 1)


@triton.jit
def _sum_items(x, start, end, c, cm, jn, js, offs, TN, N, S, sN, sS, TS, items, full,
               full_nv, tail_nv, ACC: tl.constexpr, I64: tl.constexpr, BN: tl.constexpr,
               BS: tl.constexpr, ST: tl.constexpr):  # fmt: skip
    BC: tl.constexpr = c.shape[0]
    s1 = tl.zeros((BC, BN * BS), ACC)
    for it in tl.range(start, end, num_stages=ST):
        n0, s0, rm = K._item(it, TN, N, S, jn, js, BN, BS)
        m = cm[:, None] & rm[None, :]
        s1 += tl.load(x + K._base(n0, s0, sN, sS, I64) + offs, mask=m, other=0).to(ACC)
    n = K._count(start, end, full, full_nv, tail_nv, ACC)
    return n, tl.sum(s1, 1) / n, tl.sum(s1, 1) * 0 + 1.0


def variants(bn_paths):
    """(name, spec) pairs: the shipped choice, the two launches alone, and the two
    launches with each BN_TILINGS tiling (lanes:programs a multiprocessor:warps[:stages],
    e.g. 16384:2:8:4)."""
    out = [("shipped", bn_paths.shipped), ("two", bn_paths.two_launch)]
    from torch_ext.backends.cuda import spec as cuda_spec

    sms = cuda_spec._sm_count()
    for t in filter(None, os.environ.get("BN_TILINGS", "").split(",")):
        lanes, per_sm, warps, *st = (int(v) for v in t.split(":"))

        def fn(name, *a, lanes=lanes, per_sm=per_sm, warps=warps, st=st):
            if name == "batch_norm_tiling":
                return lanes, per_sm * sms, 4096, warps, 1
            if name == "batch_norm_stages" and st:
                return st[0]
            return bn_paths.two_launch(name, *a)

        out.append((t, fn))
    return out


def run_one(variant):
    import bn_paths

    if variant == "shifted":
        K._welford_items = _shifted_items
    elif variant == "sum":
        K._welford_items = _sum_items
    import sweeps
    from torch_ext.ops import batch_norm as BN

    for layout, c, hw, ops in bn_paths.cases():
        x, dy, wt, bs, rm, rv = ops[:6]
        ref = torch.var_mean(x.float(), [0, 2, 3], correction=0)
        for name, fn in variants(bn_paths):
            BN.spec = fn
            _, mean, inv = BN.bn_forward(x, wt, bs, rm.clone(), rv.clone(), True, 0.1, 1e-5)
            var = 1.0 / inv.float() ** 2 - 1e-5
            err = max((mean - ref[1]).abs().max().item(),
                      ((var - ref[0]) / ref[0]).abs().max().item())  # fmt: skip
            f = bn_paths.timed(sweeps.bn_calls(ops, BN)[0])
            print(f"{variant:8s} {name:14s} {layout} 32x{c}x{hw}x{hw}: fwd {f * 1e3:6.1f} us"
                  f"  stats err {err:.1e}", flush=True)  # fmt: skip


def main():
    one = os.environ.get("BN_PROBE")
    if one:
        run_one(one)
        return
    for v in VARIANTS:
        subprocess.run([sys.executable, __file__], env={**os.environ, "BN_PROBE": v}, check=False)


if __name__ == "__main__":
    main()
