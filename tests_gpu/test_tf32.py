"""TF32 convolutions on the cuda driver follow PyTorch's TF32 setting for cuDNN (the legacy
torch.backends.cudnn.allow_tf32, or torch.backends.cudnn.conv.fp32_precision), as
PyTorch's CUDA convolutions do: on (PyTorch's default) a float32 convolution multiplies
in TF32, off it computes in float32. tests/ turns it off (tests/conftest.py)."""

import torch
import torch.nn.functional as F

from conftest import DEV


def _rel_err(x, w, allow):
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = allow
    try:
        out = F.conv2d(x.to(DEV), w.to(DEV), padding=1).cpu().double()
    finally:
        torch.backends.cudnn.allow_tf32 = old
    ref = F.conv2d(x.double(), w.double(), padding=1)
    return ((out - ref).norm() / ref.norm()).item()


def test_conv_tf32_follows_cudnn_allow_tf32():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 64, 16, 16, generator=g)
    w = torch.randn(64, 64, 3, 3, generator=g)
    ieee = _rel_err(x, w, False)
    tf32 = _rel_err(x, w, True)
    assert ieee < 1e-6, ieee  # float32 products, float32 sums
    assert 1e-5 < tf32 < 2e-3, tf32  # TF32's 10-bit mantissa shows


def test_conv_tf32_follows_fp32_precision_api():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 64, 16, 16, generator=g)
    w = torch.randn(64, 64, 3, 3, generator=g)
    errs = {}
    try:
        for p in ("ieee", "tf32"):
            torch.backends.cudnn.conv.fp32_precision = p  # the new API; legacy now mixed
            out = F.conv2d(x.to(DEV), w.to(DEV), padding=1).cpu().double()
            ref = F.conv2d(x.double(), w.double(), padding=1)
            errs[p] = ((out - ref).norm() / ref.norm()).item()
    finally:
        torch.backends.cudnn.allow_tf32 = False  # tests/conftest.py's state
    assert errs["ieee"] < 1e-6 and 1e-5 < errs["tf32"] < 2e-3, errs
