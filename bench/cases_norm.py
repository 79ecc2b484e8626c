"""Batch norm at every distinct ResNet-50 batch-norm shape (batch 32, 224x224 input),
bf16 activations with fp32 weights and statistics (what bf16 autocast gives), NCHW
and channels_last, forward (training, running stats updated) and backward.

The op names shard the list: `--ops batch_norm_fwd`, `batch_norm_fwd_cl`,
`batch_norm_bwd`, `batch_norm_bwd_cl` (12 shapes each). Bytes are the floor a
memory-bound kernel must move: forward reads x and writes y; backward reads dy and
x and writes dx (the per-channel vectors are counted too, negligible). The report
sets GB/s beside a device-to-device copy of the same run, and the time beside that of a copy
moving the same bytes on the same device (tag `same_copy`). Torch's side is eager:
F.batch_norm (cuDNN on CUDA) forward, aten.native_batch_norm_backward backward.
"""

import torch
import torch.nn.functional as F

# (channels, spatial size) of each BatchNorm2d in torchvision's ResNet-50 (v1.5).
RESNET50_BN = [
    (64, 112), (64, 56), (256, 56), (128, 56), (128, 28), (512, 28),
    (256, 28), (256, 14), (1024, 14), (512, 14), (512, 7), (2048, 7),
]  # fmt: skip
BATCH = 32


def _bn_fwd(x, w, b, rm, rv):
    return F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5)


def _bn_bwd(dy, x, w, mean, invstd):
    return torch.ops.aten.native_batch_norm_backward(
        dy, x, w, None, None, mean, invstd, True, 1e-5, [True, True, True]
    )


def _sizes(c, hw, scale):
    # Dry runs shrink the batch and the spatial size, keep the channels.
    n = max(1, int(BATCH * scale))
    h = max(2, int(hw * min(1.0, scale) ** 0.5))  # training needs 2+ values a channel
    return n, c, h


def _fmt(t, cl):
    return t.contiguous(memory_format=torch.channels_last) if cl else t


def batch_norm_cases(case_cls):
    cases = []
    for cl in (False, True):
        suffix, layout = ("_cl", "channels_last") if cl else ("", "nchw")
        for c, hw in RESNET50_BN:

            def fwd_make(dt, scale, c=c, hw=hw, cl=cl):
                n, c, h = _sizes(c, hw, scale)
                x = _fmt(torch.randn(n, c, h, h).to(dt), cl)
                w, b = torch.rand(c) + 0.5, torch.randn(c)
                return x, w, b, torch.zeros(c), torch.ones(c)

            def bwd_make(dt, scale, c=c, hw=hw, cl=cl):
                n, c, h = _sizes(c, hw, scale)
                x = _fmt(torch.randn(n, c, h, h).to(dt), cl)
                dy = _fmt(torch.randn(n, c, h, h).to(dt), cl)
                xf = x.float()
                var, mean = torch.var_mean(xf, [0, 2, 3], correction=0)
                return dy, x, torch.rand(c) + 0.5, mean, torch.rsqrt(var + 1e-5)

            shape = f"{BATCH}x{c}x{hw}x{hw} {layout}"
            cases.append(case_cls("batch_norm_fwd" + suffix, shape, torch.bfloat16,
                                  fwd_make, _bn_fwd, tags=["same_copy"]))  # fmt: skip
            cases.append(case_cls("batch_norm_bwd" + suffix, shape, torch.bfloat16,
                                  bwd_make, _bn_bwd, tags=["same_copy"]))  # fmt: skip
    return cases
