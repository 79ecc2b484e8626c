"""The channels_last 1x1 weight gradient's two paths on ResNet-50's stride-1 shapes
(batch 32, bf16): the 1x1 kernel (conv_gemm._tuned_wgrad, its slices tuned) and the
product over the pixels (conv_gemm._gemm_wgrad, the matrix products' tuner: split K,
TMA, the warp-specialised kernel), each timed by a CUDA graph and by the tuner's own
timer (ops/_tune.py `_time`: launches queued behind a spin), beside cuDNN; and which
one conv_gemm.pointwise_weight_grad's tuner keeps.

Standalone (no build). A line per shape: cuDNN us, kernel graph/tuner us, product
graph/tuner us, the pick.

    python tests_gpu/harness/wgrad_1x1_paths.py
"""

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402

from sweeps import bench  # noqa: E402
from torch_ext.ops import _tune, conv_gemm  # noqa: E402

# (in, out, map) of the stride-1 1x1 convolutions
SHAPES = [(64, 64, 56), (64, 256, 56), (256, 64, 56), (256, 128, 56), (128, 512, 28),
          (512, 128, 28), (512, 256, 28), (256, 1024, 14), (1024, 256, 14),
          (1024, 512, 14), (512, 2048, 7), (2048, 512, 7)]  # fmt: skip
SMOKE = DEV == "cpu"
if SMOKE:
    SHAPES = [(16, 16, 4)]


def tuner_time(fn):
    if SMOKE:
        fn()
        return 1.0
    return min(_tune._time(lambda cfg: fn(), (), torch.device(DEV)) for _ in range(3))


for cin, cout, hw in SHAPES:
    n = 2 if SMOKE else 32
    cl = torch.channels_last
    x = torch.randn(n, cin, hw, hw, device=DEV, dtype=torch.bfloat16).contiguous(memory_format=cl)
    dy = torch.randn(n, cout, hw, hw, device=DEV, dtype=torch.bfloat16).contiguous(memory_format=cl)
    w = torch.randn(cout, cin, 1, 1, device=DEV, dtype=torch.bfloat16).contiguous(memory_format=cl)
    shape = w.shape
    direct = conv_gemm._operands(dy, x, n, hw * hw)

    def cudnn():
        return torch.ops.aten.convolution_backward(
            dy, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False]
        )[1]

    def kernel():
        return conv_gemm._tuned_wgrad(dy, x, shape, direct)

    def gemm():
        return conv_gemm._gemm_wgrad(dy, shape, direct)

    ref = cudnn().float()
    errs = [((f().float() - ref).abs().max() / ref.abs().max()).item() for f in (kernel, gemm)]
    t = {name: (bench(f, SMOKE), tuner_time(f)) for name, f in
         (("cudnn", cudnn), ("kernel", kernel), ("gemm", gemm))}  # fmt: skip
    conv_gemm.pointwise_weight_grad(dy, x, shape)
    key = ("pw_wgrad_cl", dy.dtype, *dy.shape, *shape, *x.shape)
    fits = conv_gemm._gemm_wgrad_fits(dy, shape, direct)
    pick = _tune._memory.get(f"conv|{_tune._key_text(key)}") if fits else "kernel only"
    print(
        f"{cin}->{cout} @{hw}: cuDNN {t['cudnn'][0] * 1e3:.1f} | kernel {t['kernel'][0] * 1e3:.1f}"
        f" / {t['kernel'][1] * 1e3:.1f} | gemm {t['gemm'][0] * 1e3:.1f} / {t['gemm'][1] * 1e3:.1f}"
        f" us (graph / tuner) | pick {pick} | err {errs[0]:.1e} {errs[1]:.1e}",
        flush=True,
    )
