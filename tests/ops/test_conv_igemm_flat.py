"""ops/conv_igemm_flat.py: convolutions over few input channels (a 3-channel stem), the
forward and the weight gradient reducing over (last tap, channel) runs: against the CPU
in float64, 1-d to 3-d, strides, padding, dilation of the other dimensions, layouts,
split weight-gradient reductions, and which convolutions take the path."""

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import conv_igemm_flat, convolution

DEV = "privateuseone"


@pytest.fixture
def taken(monkeypatch):
    """Counts the calls of the path's forward and weight gradient."""
    calls = {"fwd": 0, "wgrad": 0}
    for name, tag in (("flat_forward", "fwd"), ("flat_weight_grad", "wgrad")):
        real = getattr(conv_igemm_flat, name)

        def counted(*a, _real=real, _tag=tag):
            calls[_tag] += 1
            return _real(*a)

        monkeypatch.setattr(convolution, name, counted)
    return calls


def _check(x_shape, w_shape, dtype, tol, channels_last=False, **geom):
    nd = len(x_shape) - 2
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    x = torch.randn(*x_shape, dtype=torch.float64).to(dtype).double().requires_grad_()
    w = torch.randn(*w_shape, dtype=torch.float64).to(dtype).double().requires_grad_()
    b = torch.randn(w_shape[0], dtype=torch.float64).to(dtype).double().requires_grad_()
    y = conv(x, w, b, **geom)
    g = torch.randn_like(y).to(dtype).double()
    ref = torch.autograd.grad(y, (x, w, b), g)
    xd = x.detach().to(dtype).to(DEV)
    if channels_last:
        xd = xd.contiguous(memory_format=torch.channels_last)
    xd, wd, bd = (
        t.requires_grad_() for t in (xd, w.detach().to(dtype).to(DEV), b.detach().to(dtype).to(DEV))
    )
    yd = conv(xd, wd, bd, **geom)
    got = torch.autograd.grad(yd, (xd, wd, bd), g.to(dtype).to(DEV))
    if channels_last:
        assert yd.is_contiguous(memory_format=torch.channels_last)
    for name, a, r in zip(("y", "dx", "dw", "db"), (yd, *got), (y, *ref)):
        err = (a.detach().cpu().double() - r).abs().max() / r.abs().max()
        assert err < tol, (name, a.shape, err.item())


@pytest.mark.parametrize(
    "dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)], ids=["f32", "bf16"]
)
def test_stem_matches_cpu(taken, dtype, tol):
    # float32 products in float32 (the suite may have frozen the global flags: the context)
    with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=False):
        _check((2, 3, 21, 18), (8, 3, 7, 7), dtype, tol, stride=2, padding=3)
    assert taken == {"fwd": 1, "wgrad": 1}


@pytest.mark.parametrize(
    "x_shape,w_shape,geom",
    [
        ((2, 2, 17), (5, 2, 5), dict(stride=2, padding=2)),  # 1-d
        ((1, 3, 9, 10), (6, 3, 3, 5), dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1))),
        ((2, 1, 5, 6, 7), (4, 1, 3, 3, 3), dict(padding=1)),  # 3-d, one channel
        ((2, 5, 8, 9), (3, 5, 2, 4), dict(padding=(1, 3))),  # J = 20: two tile widths
    ],
    ids=["1d", "2d_dilated_rows", "3d", "odd_run"],
)
def test_geometries_match_cpu(taken, x_shape, w_shape, geom):
    _check(x_shape, w_shape, torch.float64, 1e-10, **geom)
    assert taken == {"fwd": 1, "wgrad": 1}


def test_channels_last_and_split_weight_gradient(taken):
    """A channels_last input keeps its layout; 4608 output pixels split the weight
    gradient's reduction into ordered slices."""
    _check((2, 3, 48, 48), (4, 3, 3, 3), torch.float64, 1e-10, channels_last=True, padding=1)
    assert taken == {"fwd": 1, "wgrad": 1}


def test_other_convolutions_keep_the_implicit_gemm(taken):
    x = torch.randn(1, 16, 6, 6, device=DEV)
    F.conv2d(x, torch.randn(4, 16, 3, 3, device=DEV))  # 16 channels: full channel blocks
    F.conv2d(x[:, :4], torch.randn(4, 2, 3, 3, device=DEV), groups=2)  # groups
    F.conv2d(x[:, :3], torch.randn(4, 3, 3, 3, device=DEV), dilation=(1, 2))  # last-dim dilation
    F.conv2d(x[:, :3], torch.randn(4, 3, 1, 30, device=DEV), padding=(0, 12))  # run of 90
    F.conv_transpose2d(x[:, :3], torch.randn(3, 4, 3, 3, device=DEV))  # transposed
    assert taken == {"fwd": 0, "wgrad": 0}


def test_weight_gradient_pads_channels_to_fours():
    """The weight gradient reads x with its channels padded to a multiple of 4 (8-byte
    runs) while the run of taps still fits MAX_RUN; the geometries above (1, 2, 3 and 5
    channels) check the padded reads against the CPU."""
    from torch_ext.ops.conv_igemm_flat import MAX_RUN, padded_channels

    assert [padded_channels(c, 7) for c in (1, 2, 3, 4, 5)] == [4, 4, 4, 4, 8]
    assert padded_channels(3, 17) == 3 and 4 * 17 > MAX_RUN  # 68 elements: kept at 3
    assert padded_channels(9, 5) == 12 and padded_channels(9, 6) == 9
