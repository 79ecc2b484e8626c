"""Depthwise convolutions (MobileNetV3-Large's, batch 32, bf16) against cuDNN on torch's
own cuda tensors (standalone: no build needed): forward, input gradient and weight
gradient, NCHW or channels_last, every (channel block, rows block, warps) candidate the
tuner would time and some more, the best three, the rule's first, and the op at the best
(CUDA-graph timed: the kernels' time, not the host's).

    python tests_gpu/harness/sweep_depthwise.py
    DW_LAYOUT=channels_last,nchw DW_PASSES=fwd,wgrad python tests_gpu/harness/sweep_depthwise.py
    TUNE_DEVICE=cpu python tests_gpu/harness/sweep_depthwise.py   # interpreter dry run
"""

import os
import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sweeps  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from bench.conv_cases import BATCH, MOBILENETV3_DW  # noqa: E402
from torch_ext.ops import conv_depthwise as DW  # noqa: E402

SMOKE = DEV == "cpu"
if SMOKE:
    BATCH, MOBILENETV3_DW = 2, [(24, 3, 1, 8), (40, 5, 2, 9)]
    torch.cuda.get_device_name = lambda: "cpu (interpreter)"
LAYOUTS = os.environ.get("DW_LAYOUT", "channels_last").split(",")
PASSES = os.environ.get("DW_PASSES", "fwd,dgrad,wgrad").split(",")


def bench(fn):
    return sweeps.bench(fn, SMOKE)


picked = {}
tune_all = sweeps.time_all(picked, bench)


shipped = DW.dw_candidates


def more(c, channels_last, wgrad=False):
    extra = [(bc, rows, 4) for bc in (8, 16, 32, 64, 128) for rows in (32, 64, 128, 256)
             if 512 <= bc * rows <= 8192]  # fmt: skip
    return shipped(c, channels_last, wgrad) + extra


DW.dw_candidates = more
summary = {}
for layout in LAYOUTS:
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    for pas in PASSES:
        ratios = []
        print(f"{layout} {pas}: shape | torch us | ours us | vs torch | best / rule us | top")
        for c, k, s, hw in MOBILENETV3_DW:
            pad = k // 2
            x = torch.randn(BATCH, c, hw, hw, device=DEV, dtype=torch.bfloat16)
            x = x.contiguous(memory_format=fmt)
            w = (torch.randn(c, 1, k, k, device=DEV, dtype=torch.bfloat16) / k).contiguous(
                memory_format=fmt
            )
            y = F.conv2d(x, w, None, s, pad, 1, c)
            dy = torch.randn_like(y).contiguous(memory_format=fmt)
            geo = ([s, s], [pad, pad], [1, 1])
            if pas == "fwd":

                def ref():
                    return F.conv2d(x, w, None, s, pad, 1, c)

                def ours():
                    return DW.dw_forward(x, w, None, *geo, y.shape[2:])
            elif pas == "dgrad":

                def ref():
                    return torch.ops.aten.convolution_backward(
                        dy, x, w, None, *geo, False, [0, 0], c, [True, False, False]
                    )[0]

                def ours():
                    return DW.dw_input_grad(dy, w, *geo, x.shape)
            else:

                def ref():
                    return torch.ops.aten.convolution_backward(
                        dy, x, w, None, *geo, False, [0, 0], c, [False, True, False]
                    )[1]

                def ours():
                    return DW.dw_weight_grad(dy, x, w.shape, *geo)

            DW.tuned = tune_all
            picked.clear()
            try:
                got = ours()
                r = ref()
                err = ((got.float() - r.float()).abs().max() / r.float().abs().max()).item()
                DW.tuned = lambda f, key, cands, run, d: picked["best"][1]
                t_ours, t_ref = bench(ours), bench(ref)
            except Exception as e:  # noqa: BLE001
                print(f"  {c} k{k} s{s} @{hw}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                continue
            ratios.append(sweeps.report(f"{c} k{k} s{s} @{hw}", t_ref, t_ours, picked, err))
        if ratios:
            g = torch.tensor(ratios).log().mean().exp().item()
            summary[(layout, pas)] = (g, min(ratios))
            print(f"{layout} {pas} geomean vs torch {g:.2f}x, lowest {min(ratios):.2f}x")
for (layout, pas), (g, lo) in summary.items():
    print(f"summary {layout:>13} {pas:<5} geomean {g:.2f}x lowest {lo:.2f}x")
