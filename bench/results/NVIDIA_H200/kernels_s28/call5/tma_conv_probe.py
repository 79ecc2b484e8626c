"""Every candidate of the stride-1 3x3 implicit GEMMs (ops/conv_igemm.py's gathering
kernel, split or not, and ops/conv_igemm_tma.py's TMA kernel) timed on ResNet-50's
channels_last layers at batch 32 (bf16), beside cuDNN: one line per candidate, fastest
first (standalone: torch's cuda tensors, no build).

    python tests_gpu/harness/tma_conv_probe.py [fwd,dgrad]
    PROBE_FORCE="(128, 128, 64, 8, 4, 'tma')" ...   # that configuration alone (for ncu)
    PROBE_LAYERS=512,128 ...                          # those layers alone
"""

import os
import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import conv_igemm  # noqa: E402

WHICH = (sys.argv[1] if len(sys.argv) > 1 else "fwd,dgrad").split(",")
FORCE = os.environ.get("PROBE_FORCE")
LAYERS = [(64, 56), (128, 28), (256, 14), (512, 7)]  # (channels, map) of the 3x3 s1 layers
if os.environ.get("PROBE_LAYERS"):  # e.g. "512,128": those channel counts only
    LAYERS = [t for t in LAYERS if str(t[0]) in os.environ["PROBE_LAYERS"].split(",")]
SMOKE = DEV == "cpu"
if SMOKE:
    LAYERS = [(16, 7)]


def bench(fn):
    return sweeps.bench(fn, SMOKE)


def main():
    cl = torch.channels_last
    n = 2 if SMOKE else 32
    for c, hw in LAYERS:
        x = torch.randn(n, c, hw, hw, device=DEV).to(torch.bfloat16).contiguous(memory_format=cl)
        w = (torch.randn(c, c, 3, 3, device=DEV) * 0.05).to(torch.bfloat16)
        w = w.contiguous(memory_format=cl)
        for which in WHICH:
            if which == "fwd":

                def ref():
                    return F.conv2d(x, w, None, 1, 1)

                def ours():
                    return conv_igemm.conv_forward(x, w, None, [1, 1], [1, 1], [1, 1], 1, [hw, hw])
            else:

                def ref():
                    mask = [True, False, False]
                    args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)
                    return torch.ops.aten.convolution_backward(x, x, w, None, *args)[0]

                def ours():
                    return conv_igemm.conv_scatter(x, w, None, [1, 1], [1, 1], [1, 1], 1, [hw, hw])

            times = []

            def tune_all(family, key, candidates, run, device):
                cands = (
                    [eval(FORCE)] if FORCE else list(dict.fromkeys(tuple(k) for k in candidates))
                )
                for cfg in cands:
                    try:
                        times.append((bench(lambda cfg=cfg: run(cfg)), cfg))
                    except Exception as e:  # noqa: BLE001
                        print(f"    {cfg}: {type(e).__name__}: {str(e)[:100]}", flush=True)
                times.sort(key=lambda t: t[0])
                return times[0][1]

            conv_igemm.tuned = tune_all
            y = ours()
            err = (
                (y.float() - ref()[0 if which == "dgrad" else slice(None)].float())
                .abs()
                .max()
                .item()
            )
            t_ref = bench(ref)
            print(
                f"{which} {c}->{c} k3 s1 @{hw}: cuDNN {t_ref * 1e3:.1f} us, max err {err:.2e}",
                flush=True,
            )
            for t, cfg in times[:12]:
                print(f"    {t * 1e3:7.1f} us  {t_ref / t:5.2f}x  {cfg}", flush=True)


main()
