"""The convolution benchmark's frozen case list (`python -m bench --suite conv`):
every distinct conv shape of torchvision's ResNet-50 at batch 32 (224x224) and
the depthwise convs of MobileNetV3-Large, each as forward, input gradient and
weight gradient, bf16, NCHW and channels_last. `--shard i/n` runs every n-th
case from the i-th (1-based) so each piece fits in a few minutes; `--scale`
shrinks batch, channels and image (a host-driver smoke run).
"""

import torch
import torch.nn.functional as F

from bench.cases import Case, _randn

# (cin, cout, kernel, stride, input size); padding kernel // 2, groups 1
RESNET50 = [
    (3, 64, 7, 2, 224),
    (64, 64, 1, 1, 56),
    (64, 64, 3, 1, 56),
    (64, 256, 1, 1, 56),
    (256, 64, 1, 1, 56),
    (256, 128, 1, 1, 56),
    (128, 128, 3, 2, 56),
    (128, 512, 1, 1, 28),
    (256, 512, 1, 2, 56),
    (512, 128, 1, 1, 28),
    (128, 128, 3, 1, 28),
    (512, 256, 1, 1, 28),
    (256, 256, 3, 2, 28),
    (256, 1024, 1, 1, 14),
    (512, 1024, 1, 2, 28),
    (1024, 256, 1, 1, 14),
    (256, 256, 3, 1, 14),
    (1024, 512, 1, 1, 14),
    (512, 512, 3, 2, 14),
    (512, 2048, 1, 1, 7),
    (1024, 2048, 1, 2, 14),
    (2048, 512, 1, 1, 7),
    (512, 512, 3, 1, 7),
]
# MobileNetV3-Large depthwise: (channels, kernel, stride, input size)
MOBILENETV3_DW = [
    (16, 3, 1, 112),
    (64, 3, 2, 112),
    (72, 3, 1, 56),
    (72, 5, 2, 56),
    (120, 5, 1, 28),
    (240, 3, 2, 28),
    (200, 3, 1, 14),
    (184, 3, 1, 14),
    (480, 3, 1, 14),
    (672, 3, 1, 14),
    (672, 5, 2, 14),
    (960, 5, 1, 7),
]
PASSES = ("fwd", "dgrad", "wgrad")
BATCH = 32


def _scaled(v, scale, floor=1):
    return max(floor, int(round(v * scale)))


def _case(net, cin, cout, k, s, size, groups, pas, layout, dtype=torch.bfloat16):
    pad = k // 2
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format

    def make(dt, scale):
        sc = min(1.0, scale) ** (1 / 3)  # shrink batch, channels and image alike
        n, ci, co = _scaled(BATCH, sc), _scaled(cin, sc), _scaled(cout, sc)
        g = ci if groups > 1 else 1
        co = ci if groups > 1 else co
        hw = max(k, _scaled(size, sc))
        x = _randn(n, ci, hw, hw, dtype=dt).contiguous(memory_format=fmt)
        w = (_randn(co, ci // g, k, k, dtype=dt) * (ci // g * k * k) ** -0.5).contiguous(
            memory_format=fmt
        )
        ho = (hw + 2 * pad - k) // s + 1
        gy = _randn(n, co, ho, ho, dtype=dt).contiguous(memory_format=fmt)
        return (x, w, gy, g)

    def fn(x, w, gy, g):
        if pas == "fwd":
            return F.conv2d(x, w, None, s, pad, 1, g)
        mask = [pas == "dgrad", pas == "wgrad", False]
        res = torch.ops.aten.convolution_backward(
            gy, x, w, None, [s, s], [pad, pad], [1, 1], False, [0, 0], g, mask
        )
        return res[0] if pas == "dgrad" else res[1]

    def flops(inputs):
        x, w, gy, g = inputs
        return 2 * gy.numel() * w.shape[1] * k * k

    shape = f"{net} {cin}->{cout} k{k} s{s} @{size} {layout}"
    return Case(f"conv_{pas}", shape, dtype, make, fn, flops=flops, matrix=True, tags=[net])


def conv_cases():
    """The frozen list, in a fixed order."""
    out = []
    for layout in ("nchw", "nhwc"):
        for pas in PASSES:
            for cin, cout, k, s, size in RESNET50:
                out.append(_case("resnet50", cin, cout, k, s, size, 1, pas, layout))
            for c, k, s, size in MOBILENETV3_DW:
                out.append(_case("mbv3_dw", c, c, k, s, size, c, pas, layout))
    return out


def shard(cases, spec):
    """Cases of shard `i/n` (1-based): every n-th case from the i-th."""
    if not spec:
        return cases
    i, n = (int(v) for v in spec.split("/"))
    if not 1 <= i <= n:
        raise ValueError(f"--shard {spec}: expected i/n with 1 <= i <= n")
    return cases[i - 1 :: n]
