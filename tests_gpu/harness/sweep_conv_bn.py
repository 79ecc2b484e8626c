"""Convolution weight gradients and batch norm on ResNet-50's shapes (batch 32, bf16,
NCHW), each against cuDNN on torch's own cuda tensors (standalone: no build needed).

  wgrad: every candidate the tuner would time (tiles x slices), the best three and the
         rule's first, then the whole op (its layout copies included) at the best;
  igemm: the forward and input gradient of the layers that take the implicit GEMM
         (conv_igemm.py: 3x3 by default), likewise: every candidate (tiles x split of K),
         with IGEMM_MORE=1 also wider tiles, longer reduction steps, other stages and
         warps;
  bn:    batch norm forward and backward under a coordinate sweep of the cuda spec's
         tiling (tile lanes, programs, warps, items per normalise program) around the
         shipped one, bandwidth as a share of the device-to-device copy.

    python tests_gpu/harness/sweep_conv_bn.py [wgrad,igemm,bn]

Environment: IGEMM_LAYOUT=nchw (default channels_last), IGEMM_KERNELS=3 (layers of those
kernel sizes), IGEMM_MORE=1, CONV_ONLY=256->256,k3 s1 @7 (layers whose "cin->cout k3 s1
@14" holds one of the parts; both conv sweeps); WGRAD_LAYOUT=channels_last (default NCHW), WGRAD_KERNELS=1 (or 1,3,7: the
layers of those kernel sizes only), WGRAD_MORE=0 (the shipped candidates alone; else
also other stages, reduction steps and warps), TUNE_DEVICE=cpu (a dry run under the
interpreter on tiny shapes).
"""

import os
import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import sweeps  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from bench.cases_norm import RESNET50_BN  # noqa: E402
from bench.conv_cases import BATCH, RESNET50  # noqa: E402
from torch_ext.backends.cuda import spec as cuda_spec  # noqa: E402
from torch_ext.ops import batch_norm as BN  # noqa: E402
from torch_ext.ops import conv_gemm, conv_igemm, conv_igemm_bwd, conv_igemm_flat  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "wgrad,bn").split(","))


SMOKE = DEV == "cpu"  # a dry run under the interpreter: tiny shapes, one call a "timing"
if SMOKE:
    BATCH, RESNET50, RESNET50_BN = 2, [(8, 16, 1, 1, 6), (24, 8, 3, 2, 6)], [(16, 6)]
    torch.cuda.get_device_name = lambda: "cpu (interpreter)"
    cuda_spec._sm_count = lambda: 2


def bench(fn):
    return sweeps.bench(fn, SMOKE)


def wanted(cin, cout, k, s, hw):
    """Whether CONV_ONLY (parts of "cin->cout k3 s1 @14", comma-separated) takes a layer."""
    only = [t for t in os.environ.get("CONV_ONLY", "").split(",") if t]
    return not only or any(t in f"{cin}->{cout} k{k} s{s} @{hw}" for t in only)


src = torch.empty(1 << (10 if SMOKE else 28), dtype=torch.uint8, device=DEV)
dst = torch.empty_like(src)
COPY = 2 * src.numel() / bench(lambda: dst.copy_(src)) / 1e6  # GB/s
print(f"device {torch.cuda.get_device_name()} copy {COPY:.0f} GB/s", flush=True)

if "wgrad" in WHICH:
    picked = {}
    tune_all = sweeps.time_all(picked, bench)

    MODS = (conv_gemm, conv_igemm_bwd, conv_igemm_flat)

    def set_tuned(fn):
        for m in MODS:
            m.tuned = fn

    set_tuned(tune_all)
    shipped_candidates = conv_igemm_bwd.conv_candidates

    def more_candidates(M, N, K, dtype):
        """The shipped list, then other stages, reduction steps and warps (WGRAD_MORE=0:
        the shipped list alone)."""
        extra = [
            (bm, bn, bk, w, st)
            for bm, bn, w in ((128, 128, 8), (128, 128, 4), (128, 64, 4), (64, 128, 4), (64, 64, 4))
            for bk in (32, 64)
            for st in (2, 3, 4, 5)
        ]
        return shipped_candidates(M, N, K, dtype) + extra * (os.environ.get("WGRAD_MORE") != "0")

    conv_igemm_bwd.conv_candidates = conv_gemm.conv_candidates = more_candidates
    from torch_ext.ops.convolution import convolution_backward_overrideable as cbo

    ratios = []
    print("wgrad: shape | torch us | ours (op) us | vs torch | kernel best / rule us | best cfg")
    layout = os.environ.get("WGRAD_LAYOUT", "nchw")  # or channels_last
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    only = os.environ.get("WGRAD_KERNELS")  # e.g. "1": the 1x1 layers alone
    print(f"layout {layout}")
    for cin, cout, k, s, hw in RESNET50:
        if only and str(k) not in only.split(",") or not wanted(cin, cout, k, s, hw):
            continue
        x = torch.randn(BATCH, cin, hw, hw, device=DEV, dtype=torch.bfloat16)
        x = x.contiguous(memory_format=fmt)
        w = torch.randn(cout, cin, k, k, device=DEV, dtype=torch.bfloat16)
        w = w.contiguous(memory_format=fmt)
        pad = k // 2
        y = torch.nn.functional.conv2d(x, w, stride=s, padding=pad)
        dy = torch.randn_like(y).contiguous(memory_format=fmt)
        args = ([s, s], [pad, pad], [1, 1], False, [0, 0], 1)

        def ref():
            return torch.ops.aten.convolution_backward(dy, x, w, None, *args, [False, True, False])[
                1
            ]

        def ours():
            return cbo(dy, x, w, *args, [False, True, False])[1]

        picked.clear()
        try:
            got = ours()  # tunes (tune_all), then the timed calls reuse nothing: time the op
            err = ((got.float() - ref().float()).abs().max() / ref().float().abs().max()).item()
            set_tuned(lambda f, k, c, r, d: picked["best"][1])
            t_ours, t_ref = bench(ours), bench(ref)
            if not SMOKE:
                sweeps.profile_kernels("ours", ours)
            set_tuned(tune_all)
        except Exception as e:  # noqa: BLE001
            print(f"  {cin}->{cout} k{k} s{s} @{hw}: {type(e).__name__}: {e}", flush=True)
            set_tuned(tune_all)
            continue
        label = f"{cin}->{cout} k{k} s{s} @{hw}"
        ratios.append(sweeps.report(label, t_ref, t_ours, picked, err))
    if ratios:
        g = torch.tensor(ratios).log().mean().exp().item()
        print(f"wgrad geomean vs torch {g:.2f}x over {len(ratios)}, lowest {min(ratios):.2f}x")

if "igemm" in WHICH:
    picked = {}
    conv_igemm.tuned = sweeps.time_all(picked, bench)
    shipped_igemm = conv_igemm.conv_candidates

    def igemm_candidates(M, N, K, dtype):
        extra = [
            (bm, bn, bk, w, st)
            for bm, bn, bk, w in ((128, 256, 64, 8), (128, 128, 64, 8), (128, 128, 128, 8),
                                  (64, 256, 64, 8), (128, 128, 64, 4), (64, 128, 64, 4))
            for st in (4, 5)
        ]  # fmt: skip
        return shipped_igemm(M, N, K, dtype) + extra * (os.environ.get("IGEMM_MORE") == "1")

    conv_igemm.conv_candidates = igemm_candidates
    from torch_ext.ops.convolution import convolution_backward_overrideable as cbo
    from torch_ext.ops.convolution import convolution_overrideable as cfo

    layout = os.environ.get("IGEMM_LAYOUT", "channels_last")  # or nchw
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    kernels = os.environ.get("IGEMM_KERNELS", "3").split(",")
    print(f"igemm ({layout}): shape | torch us | ours (op) us | vs torch | best / rule us")
    ratios = {"fwd": [], "dgrad": []}
    for cin, cout, k, s, hw in RESNET50:
        if str(k) not in kernels or not wanted(cin, cout, k, s, hw):
            continue
        x = torch.randn(BATCH, cin, hw, hw, device=DEV, dtype=torch.bfloat16)
        x = x.contiguous(memory_format=fmt)
        w = (torch.randn(cout, cin, k, k, device=DEV, dtype=torch.bfloat16) * 0.05).contiguous(
            memory_format=fmt
        )
        pad = k // 2
        dy = torch.randn_like(torch.nn.functional.conv2d(x, w, stride=s, padding=pad))
        dy = dy.contiguous(memory_format=fmt)
        args = ([s, s], [pad, pad], [1, 1], False, [0, 0], 1)
        for pas in ("fwd", "dgrad"):
            if pas == "fwd":
                ref = lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=pad)  # noqa: E731
                ours = lambda: cfo(x, w, None, *args)  # noqa: E731
            else:
                mask = [True, False, False]
                ref = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, *args, mask)[0]  # noqa: E731,E501
                ours = lambda: cbo(dy, x, w, *args, mask)[0]  # noqa: E731
            picked.clear()
            label = f"{pas} {cin}->{cout} k{k} s{s} @{hw}"
            try:
                got = ours()
                err = ((got.float() - ref().float()).abs().max() / ref().float().abs().max()).item()
                keep = conv_igemm.tuned
                conv_igemm.tuned = lambda f, k, c, r, d: picked["best"][1]
                t_ours, t_ref = bench(ours), bench(ref)
                if not SMOKE:
                    sweeps.profile_kernels("ours", ours)
                conv_igemm.tuned = keep
            except Exception as e:  # noqa: BLE001
                print(f"  {label}: {type(e).__name__}: {e}", flush=True)
                conv_igemm.tuned = sweeps.time_all(picked, bench)
                continue
            if "best" in picked:
                ratios[pas].append(sweeps.report(label, t_ref, t_ours, picked, err))
    for pas, r in ratios.items():
        if r:
            g = torch.tensor(r).log().mean().exp().item()
            print(f"igemm {pas} geomean vs torch {g:.2f}x over {len(r)}, lowest {min(r):.2f}x")

if "bn" in WHICH:
    shipped = cuda_spec.batch_norm_tiling(2)
    sms = cuda_spec._sm_count()
    variants = [shipped]
    for lanes in (1024, 2048, 8192):
        variants.append((lanes, *shipped[1:]))
    for progs in (2, 8, 16):
        variants.append((shipped[0], progs * sms, *shipped[2:]))
    for warps in (4, 16):
        variants.append((*shipped[:3], warps, shipped[4]))
    for items in (2, 4, 8):
        variants.append((*shipped[:4], items))
    for cfg in (
        (2048, 4 * sms, 4096, 4, 1),
        (2048, 8 * sms, 4096, 4, 2),
        (8192, 4 * sms, 4096, 16, 1),
        (8192, 8 * sms, 4096, 16, 1),
        (4096, 8 * sms, 4096, 4, 1),
    ):
        variants.append(cfg)
    best = {}
    layout = os.environ.get("BN_LAYOUT", "nchw")  # or channels_last
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    only = os.environ.get("BN_SHAPES")  # e.g. "1024x14,512x7": those layers alone
    if os.environ.get("BN_SHIPPED") == "1":
        variants = [shipped]
    print(f"layout {layout}")
    for c, hw in RESNET50_BN:
        if only and f"{c}x{hw}" not in only.split(","):
            continue
        ops = sweeps.bn_operands(BATCH, c, hw, fmt, DEV)
        x, dy = ops[:2]
        nbytes = 2 * x.numel() * 2
        t_f, t_b = (bench(fn) for fn in sweeps.bn_calls(ops))
        same = torch.empty_like(x)
        t_c = bench(lambda: same.copy_(dy))
        print(
            f"bn 32x{c}x{hw}x{hw}: torch fwd {t_f * 1e3:.1f} us bwd {t_b * 1e3:.1f} us; a copy"
            f" of x {t_c * 1e3:.1f} us",
            flush=True,
        )
        if not SMOKE:
            BN.spec = lambda name, *a: getattr(cuda_spec, name)(*a)  # the shipped choice
            fwd, bwd = sweeps.bn_calls(ops, BN)
            sweeps.profile_kernels("ours", lambda: (fwd(), bwd()))
        for cfg in variants:
            BN.spec = lambda name, *a, cfg=cfg: cfg if name == "batch_norm_tiling" else None
            try:
                f, b = (bench(fn) for fn in sweeps.bn_calls(ops, BN))
            except Exception as e:  # noqa: BLE001
                print(f"  {cfg}: {type(e).__name__}: {e}", flush=True)
                continue
            fb, bb = nbytes / f / 1e6 / COPY, 1.5 * nbytes / b / 1e6 / COPY
            mark = "*" if cfg == shipped else " "
            print(f" {mark}{cfg}: fwd {f * 1e3:6.1f} us {100 * fb:4.0f}%  bwd {b * 1e3:6.1f} us"
                  f" {100 * bb:4.0f}%", flush=True)  # fmt: skip
            for d, v in (("fwd", fb), ("bwd", bb)):
                best.setdefault((d, cfg), []).append(v)
    print("bn geomean share of copy per tiling (fwd / bwd):")
    for cfg in variants:
        f = torch.tensor(best.get(("fwd", cfg), [1e-9])).log().mean().exp().item()
        b = torch.tensor(best.get(("bwd", cfg), [1e-9])).log().mean().exp().item()
        print(f"  {cfg}: {100 * f:.0f}% / {100 * b:.0f}%")
