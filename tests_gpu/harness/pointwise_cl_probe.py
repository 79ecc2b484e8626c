"""ResNet-50's channels_last 1x1 convolutions (batch 32, bf16, stride 1) through
ops/conv_gemm.py's tuned paths, beside cuDNN: the forward and the input gradient (the
product over the pixels or the implicit GEMM, whichever the tuner keeps) and the weight
gradient (the 1x1 kernel's slices or the product); each op's time and the choices kept.
PROBE_SHORT=0 takes ops/matmul_candidates.py's SHORT_STEPS tiles out of the candidates (standalone:
torch's cuda tensors, no build; a fresh tuning cache each run).

    python tests_gpu/harness/pointwise_cl_probe.py [fwd,dgrad,wgrad]
    PROBE_SHORT=0 python tests_gpu/harness/pointwise_cl_probe.py
"""

import os
import sys
import tempfile

from standalone import DEV  # first: torch_ext's kernels without its extension

os.environ["TORCH_EXT_CACHE_DIR"] = tempfile.mkdtemp()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import _tune, conv_gemm, conv_igemm, matmul_candidates  # noqa: E402

WHICH = (sys.argv[1] if len(sys.argv) > 1 else "fwd,dgrad,wgrad").split(",")
# (in, out, map): the stride-1 1x1 layers
LAYERS = [(64, 256, 56), (256, 64, 56), (128, 512, 28), (512, 128, 28), (512, 256, 28),
          (256, 1024, 14), (1024, 256, 14), (1024, 512, 14), (512, 2048, 7),
          (2048, 512, 7)]  # fmt: skip
if os.environ.get("PROBE_SHORT") == "0":
    matmul_candidates.SHORT_STEPS = []
SMOKE = DEV == "cpu"
if SMOKE:
    LAYERS = [(16, 8, 4)]
ONE = ([1, 1], [0, 0], [1, 1])  # stride, padding, dilation


def passes(x, w, dy, hw):
    """{pass: (ours, cuDNN's)} of one layer."""

    def fwd():
        def implicit():
            return conv_igemm.conv_forward(x, w, None, *ONE, 1, [hw, hw])

        return conv_gemm.cl_pointwise_forward(x, w, None, [1, 1], implicit)

    def dgrad():
        def implicit():
            return conv_igemm.conv_scatter(dy, w, None, *ONE, 1, [hw, hw])

        return conv_gemm.cl_pointwise_input_grad(dy, w, x.shape, [1, 1], implicit)

    def wgrad():
        return conv_gemm.pointwise_weight_grad(dy, x, w.shape)

    def ref(mask):
        args = (*ONE, False, [0, 0], 1, mask)
        return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, *args)

    return {
        "fwd": (fwd, lambda: F.conv2d(x, w)),
        "dgrad": (dgrad, lambda: ref([True, False, False])()[0]),
        "wgrad": (wgrad, lambda: ref([False, True, False])()[1]),
    }


def main():
    cl = torch.channels_last
    n = 2 if SMOKE else 32
    g = torch.Generator(device=DEV).manual_seed(0)
    for cin, cout, hw in LAYERS:

        def rand(*shape, scale=1.0):
            t = torch.randn(*shape, device=DEV, generator=g) * scale
            return t.to(torch.bfloat16).contiguous(memory_format=cl)

        x, w, dy = rand(n, cin, hw, hw), rand(cout, cin, 1, 1, scale=0.05), rand(n, cout, hw, hw)
        for name, (ours, theirs) in passes(x, w, dy, hw).items():
            if name not in WHICH:
                continue
            y = ours()  # tunes
            r = theirs()
            err = (y.float() - r.float()).abs().max().item() / max(
                r.float().abs().max().item(), 1e-9
            )
            t_ref, t = sweeps.bench(theirs, SMOKE), sweeps.bench(ours, SMOKE)
            kept = "; ".join(f"{k.split('|')[0]}: {v}" for k, v in _tune._memory.items())
            print(f"{name} {cin}->{cout} k1 @{hw}: cuDNN {t_ref * 1e3:.1f} us, ours {t * 1e3:.1f} "
                  f"us ({t_ref / t:.2f}x), rel err {err:.1e}; kept {kept}", flush=True)  # fmt: skip
            _tune.forget()


main()
