"""Batch norm's paths side by side on ResNet-50's shapes (batch 32, bf16), NCHW and
channels_last, forward (training) and backward, each beside a copy of the same bytes and
torch's (cuDNN) op: the shipped choice (the cuda spec), the resident kernels without
their wide lanes ("old"), and the two-launch kernels alone (one-launch paths off).

Timing: event-timed runs of 20 calls queued behind a GPU spin on the default stream
(the barrier kernels run on the default stream only: not in a CUDA graph), the spin
twice as long as the host took to queue them, median of 5, as the kernel benchmark
queues its calls. Standalone: torch's cuda tensors, no build.

    python tests_gpu/harness/bn_paths.py
    BN_SHAPES=512x7,256x14 BN_LAYOUTS=channels_last python ...
    BN_STAGES=1/1,1/4 BN_VARIANTS=shipped,s1/1,two s1/1 python ...  # pipeline stages
    BN_WARM=1 BN_SHAPES=64x56 python ...  # compile only (run shapes side by side first)
    BN_VARIANTS="two,two nocap,two p2,p2" ...  # the split reductions' register cap lifted,
                                               # 2 or 3 programs a multiprocessor
    BN_VARIANTS=shipped,coop1 ...  # one program a multiprocessor in the barrier kernels
"""

import os
import statistics
import sys
import time

from standalone import DEV  # first: torch_ext's kernels without its extension

import sweeps  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from bench.cases_norm import BATCH, RESNET50_BN  # noqa: E402
from torch_ext.backends.cuda import spec as cuda_spec  # noqa: E402
from torch_ext.ops import batch_norm as BN  # noqa: E402

SMOKE = DEV == "cpu"
if SMOKE:
    BATCH, RESNET50_BN = 2, [(16, 6)]
    cuda_spec._sm_count = lambda: 2


def timed(fn, calls=20, reps=5):
    """ms a call: `calls` calls queued behind a GPU spin longer than the host takes to
    queue them (standalone launches run Python: ~100 us a call), event-timed; the
    median of reps."""
    fn()
    if SMOKE:
        return 1.0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    spin = int((time.perf_counter() - t0) * 2.0 * 2e9)  # cycles at ~2 GHz, twice the wall
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        torch.cuda._sleep(spin)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) / calls)
    return statistics.median(out)


def shipped(name, *a):
    return getattr(cuda_spec, name)(*a)


def two_launch(name, *a):
    return None if name in ("batch_norm_coop", "batch_norm_resident") else shipped(name, *a)


def old_lanes(name, *a):
    """The resident kernels without wide lanes (before session 29)."""
    if name == "batch_norm_resident":
        lanes, progs, per_warp, _ = shipped(name, *a)
        return lanes, progs, per_warp, lanes
    return shipped(name, *a)


def staged(few, many, base=shipped):
    """`base` with `few` stages in loops of under 12 items, `many` from 12
    (batch_norm_stages)."""

    def fn(name, *a):
        if name == "batch_norm_stages":
            return many if a[1] >= 12 else few
        return base(name, *a)

    return fn


def programs(per_sm, base=shipped):
    """`base` with `per_sm` programs a multiprocessor in the split reductions (their
    register cap follows: 64Ki / (per_sm * 32 * warps))."""

    def fn(name, *a):
        if name == "batch_norm_tiling":
            lanes, progs, merge, warps, apply = shipped(name, *a)
            return lanes, per_sm * cuda_spec._sm_count(), merge, warps, apply
        return base(name, *a)

    return fn


def uncapped(base=shipped):
    """`base` with the split reductions' register cap lifted (BN._Plan.maxnreg None)."""

    def fn(name, *a):
        UNCAP[0] = True
        return base(name, *a)

    return fn


def coop_programs(per_sm):
    """The shipped choice with `per_sm` programs a multiprocessor in the one-launch barrier
    kernels (at most 2: every program must be resident at their 128-register cap)."""

    def fn(name, *a):
        if name == "batch_norm_coop":
            return shipped(name, *a)[0], per_sm
        return shipped(name, *a)

    return fn


UNCAP = [False]
_plan_init = BN._Plan.__init__


def _plan_init_hook(self, *a, **k):
    _plan_init(self, *a, **k)
    if UNCAP[0]:
        self.maxnreg = None


BN._Plan.__init__ = _plan_init_hook

VARIANTS = {"shipped": shipped, "old": old_lanes, "two": two_launch}
VARIANTS.update({"nocap": uncapped(), "two nocap": uncapped(two_launch)})
VARIANTS["coop1"] = coop_programs(1)
for k in (2, 3):
    VARIANTS[f"two p{k}"] = programs(k, two_launch)
    VARIANTS[f"p{k}"] = programs(k)
# BN_STAGES=1/1,1/4: variants of the shipped choice (and of the two launches alone) with
# those pipeline stages (loops of under 12 items / of 12 or more)
for pair in filter(None, os.environ.get("BN_STAGES", "").split(",")):
    a, b = (int(v) for v in pair.split("/"))
    VARIANTS[f"s{a}/{b}"] = staged(a, b)
    VARIANTS[f"two s{a}/{b}"] = staged(a, b, two_launch)
if os.environ.get("BN_VARIANTS"):
    VARIANTS = {k: v for k, v in VARIANTS.items() if k in os.environ["BN_VARIANTS"].split(",")}


WARM = os.environ.get("BN_WARM") == "1"


def cases():
    """(layout, channels, map side, sweeps.bn_operands) of ResNet-50's batch norms that
    BN_LAYOUTS and BN_SHAPES (e.g. 64x112,512x7) select."""
    only = os.environ.get("BN_SHAPES")
    for layout in os.environ.get("BN_LAYOUTS", "nchw,channels_last").split(","):
        fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
        for c, hw in RESNET50_BN:
            if not only or f"{c}x{hw}" in only.split(","):
                yield layout, c, hw, sweeps.bn_operands(BATCH, c, hw, fmt, DEV)


def main():
    for layout, c, hw, ops in cases():
        x, dy, wt, bs, rm, rv = ops[:6]
        same, same3 = torch.empty_like(x), torch.empty(int(x.numel() * 1.5), device=DEV,
                                                       dtype=x.dtype)  # fmt: skip
        src3 = torch.empty_like(same3)
        t_c, t_c3, t_f, t_b = (1.0,) * 4
        if not WARM:
            t_c = timed(lambda: same.copy_(dy))
            t_c3 = timed(lambda: same3.copy_(src3))
            t_f, t_b = (timed(fn) for fn in sweeps.bn_calls(ops))
        ref_y = torch.nn.functional.batch_norm(x.float(), None, None, wt, bs, True, 0.1, 1e-5)
        print(f"{layout} 32x{c}x{hw}x{hw}: copy fwd-size {t_c * 1e3:.1f} us, bwd-size "
              f"{t_c3 * 1e3:.1f} us; torch fwd {t_f * 1e3:.1f} bwd {t_b * 1e3:.1f}",
              flush=True)  # fmt: skip
        for name, fn in VARIANTS.items():
            BN.spec = fn
            UNCAP[0] = False
            try:
                y = BN.bn_forward(x, wt, bs, rm.clone(), rv.clone(), True, 0.1, 1e-5)[0]
                if WARM:  # compile only (several processes fill Triton's cache first)
                    sweeps.bn_calls(ops, BN)[1]()
                    continue
                err = (y.float() - ref_y).abs().max().item()
                f, b = (timed(fn) for fn in sweeps.bn_calls(ops, BN))
            except Exception as e:  # noqa: BLE001
                print(f"  {name}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                continue
            print(f"  {name:8s} fwd {f * 1e3:6.1f} us ({t_c / f:4.0%} of copy)  bwd "
                  f"{b * 1e3:6.1f} us ({t_c3 / b:4.0%})  err {err:.1e}", flush=True)  # fmt: skip
        BN.spec = shipped


if __name__ == "__main__":
    main()
