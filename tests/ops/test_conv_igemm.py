"""ops/conv_igemm.py: the strided adjoint gather by phases (input gradients of
strided convolutions, forwards of strided transposed ones) gives the full gather's
bits (the same nonzero products in the same order) and the CPU's result."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext
from torch_ext.ops import conv_igemm

DEV = "privateuseone"

CASES = [
    # (input shape, weight shape, conv kwargs, transposed)
    ((2, 8, 9, 10), (6, 8, 3, 3), dict(stride=2, padding=1), False),
    ((2, 8, 9, 11), (6, 4, 3, 4), dict(stride=(2, 3), padding=(1, 2), groups=2), False),
    ((2, 8, 7, 6, 5), (4, 8, 3, 1, 2), dict(stride=(2, 1, 2), padding=(0, 0, 1)), False),
    ((2, 8, 13), (6, 8, 1), dict(stride=3), False),
    ((2, 8, 5, 6), (8, 6, 3, 3), dict(stride=2, padding=1, output_padding=1), True),
]
IDS = ["3x3_s2", "grouped_s2x3", "3d", "1x1_s3", "transposed_s2"]


def _run(x, w, b, kw, transposed, phase, monkeypatch):
    """conv's forward and input gradient with every implicit GEMM forced to `phase`
    (the gather by phases, or the full one); counts the phase launches."""
    calls = []
    real = conv_igemm.phase_scatter

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    def choose(family, key, candidates, run, device):
        c = list(candidates)
        return next((t for t in c if len(t) > 5 and t[5] == phase), c[0])

    monkeypatch.setattr(conv_igemm, "phase_scatter", spy)
    monkeypatch.setattr(conv_igemm, "tuned", choose)
    torch_ext._C._plan_clear()  # the other choice's recorded launches would replay
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    if transposed:
        conv = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[x.dim()]
    xd = x.to(DEV).requires_grad_()
    y = conv(xd, w.to(DEV), b.to(DEV), **kw)
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).to(y.dtype)
    (gx,) = torch.autograd.grad(y, xd, g.to(DEV))
    return y.detach().cpu(), gx.cpu(), len(calls), g


@pytest.mark.parametrize("shape,wshape,kw,transposed", CASES, ids=IDS)
def test_phases_equal_the_full_gather_and_the_cpu(monkeypatch, shape, wshape, kw, transposed):
    torch.manual_seed(0)
    x = torch.randn(shape)
    w = torch.randn(wshape)
    b = torch.randn(wshape[1] * kw.get("groups", 1) if transposed else wshape[0])
    y1, gx1, phased, g = _run(x, w, b, kw, transposed, True, monkeypatch)
    y0, gx0, unphased, _ = _run(x, w, b, kw, transposed, False, monkeypatch)
    assert phased >= 1 and unphased == 0
    assert torch.equal(y1, y0) and torch.equal(gx1, gx0)
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    if transposed:
        conv = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[x.dim()]
    xr = x.double().requires_grad_()
    yr = conv(xr, w.double(), b.double(), **kw)
    (gxr,) = torch.autograd.grad(yr, xr, g.double())
    torch.testing.assert_close(y1.double(), yr, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(gx1.double(), gxr, atol=1e-4, rtol=1e-4)


def test_unit_stride_and_dilation_keep_the_full_gather():
    from torch_ext.ops.conv_igemm import phase_fits

    assert phase_fits([1, 2, 1], [1, 1, 1])
    assert not phase_fits([1, 1, 1], [1, 1, 1])
    assert not phase_fits([1, 2, 1], [1, 1, 2])
