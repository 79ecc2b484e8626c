"""ops/conv_gemm.py: 1x1 NCHW convolutions as batched matrix products (no layout copies),
forward and both gradients against the CPU in float64, and which convolutions take it."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext
from torch_ext.ops import conv_gemm

DEV = "privateuseone"


@pytest.fixture
def taken(monkeypatch):
    """Counts the calls of each of the path's three products."""
    calls = {"fwd": 0, "dgrad": 0, "wgrad": 0}
    for name, tag in (("pointwise_forward", "fwd"), ("pointwise_input_grad", "dgrad"),
                      ("pointwise_weight_grad", "wgrad")):  # fmt: skip
        from torch_ext.ops import convolution

        real = getattr(conv_gemm, name)

        def counted(*a, _real=real, _tag=tag):
            calls[_tag] += 1
            return _real(*a)

        monkeypatch.setattr(convolution, name, counted)
    return calls


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "shape,stride",
    [((3, 8, 5, 7), 1), ((2, 4, 64), 1), ((2, 4, 3, 2, 5), 1), ((3, 8, 14, 12), 2),
     ((2, 4, 90), 3), ((2, 4, 5, 3, 4), (1, 2, 3))],
    ids=["2d", "1d", "3d", "2d_stride2", "1d_stride3", "3d_strides"],
)  # fmt: skip
def test_pointwise_convolution_matches_cpu(taken, dtype, shape, stride):
    nd = len(shape) - 2
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, shape[1], *([1] * nd), dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, dtype=torch.float64, requires_grad=True)
    y = conv(x, w, b, stride=stride)
    g = torch.randn_like(y)
    ref = torch.autograd.grad(y, (x, w, b), g)
    xd, wd, bd = (t.detach().to(dtype).to(DEV).requires_grad_() for t in (x, w, b))
    yd = conv(xd, wd, bd, stride=stride)
    got = torch.autograd.grad(yd, (xd, wd, bd), g.to(dtype).to(DEV))
    assert taken == {"fwd": 1, "dgrad": 1, "wgrad": 1}
    assert yd.is_contiguous()
    for a, r in zip((yd, *got), (y, *ref)):
        err = (a.detach().cpu().double() - r).abs().max() / r.abs().max()
        assert err < 2e-2, (a.shape, err)


def _choosing(monkeypatch, pick, own):
    """The tuner forced: (pick,) for the keys whose name `own` accepts, the first
    candidate for the others; returns the (key name, candidates) offered, as they come."""
    offered = []

    def choose(family, key, candidates, run, device):
        offered.append((key[0], list(candidates)))
        return (pick,) if own(key[0]) else list(candidates)[0]

    monkeypatch.setattr(conv_gemm, "tuned", choose)
    torch_ext._C._plan_clear()  # the same shapes' recorded launches would replay
    return offered


@pytest.mark.parametrize("pick", ["rows", "implicit"])
@pytest.mark.parametrize("shape,stride", [((2, 24, 7, 7), 1), ((2, 24, 14, 14), 2)],
                         ids=["7x7", "14x14_stride2"])  # fmt: skip
def test_unaligned_maps_tune_rows_against_the_implicit_gemm(monkeypatch, pick, shape, stride):
    """7x7 maps (49 pixels: rows not 16-byte aligned) offer the tuner the implicit GEMM
    beside the product over rows, forward and input gradient; either gives the CPU's
    forward and gradients (a 14x14 map at stride 2 reads 7x7 pixels)."""
    offered = _choosing(monkeypatch, pick, lambda name: name.startswith("pw_"))
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    w = torch.randn(16, shape[1], 1, 1, dtype=torch.float64, requires_grad=True)
    b = torch.randn(16, dtype=torch.float64, requires_grad=True)
    y = F.conv2d(x, w, b, stride=stride)
    g = torch.randn_like(y)
    ref = torch.autograd.grad(y, (x, w, b), g)
    xd, wd, bd = (t.detach().to(torch.bfloat16).to(DEV).requires_grad_() for t in (x, w, b))
    yd = F.conv2d(xd, wd, bd, stride=stride)
    assert yd.is_contiguous() and yd.shape == y.shape
    got = torch.autograd.grad(yd, (xd, wd, bd), g.to(torch.bfloat16).to(DEV))
    kinds = [k for k, _ in offered]
    assert "pw_fwd" in kinds and "pw_dgrad" in kinds, kinds
    assert all(c[:2] == [("rows",), ("implicit",)] for k, c in offered if k.startswith("pw_"))
    for a, r in zip((yd, *got), (y, *ref)):
        err = (a.detach().cpu().double() - r).abs().max() / r.abs().max()
        assert err < 2e-2, (a.shape, err)


def test_aligned_maps_take_the_rows_untimed(monkeypatch):
    """8x8 maps (64 pixels, 16-byte rows): the product over rows, no choice timed."""

    def choose(family, key, candidates, run, device):
        assert not key[0].startswith("pw_"), key
        return list(candidates)[0]

    monkeypatch.setattr(conv_gemm, "tuned", choose)
    x = torch.randn(2, 24, 8, 8, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    w = torch.randn(16, 24, 1, 1, dtype=torch.bfloat16, device=DEV)
    F.conv2d(x, w).sum().backward()
    assert x.grad.shape == x.shape


def test_other_convolutions_keep_the_implicit_gemm(taken):
    x = torch.randn(2, 8, 6, 6, dtype=torch.bfloat16, device=DEV)
    w1 = torch.randn(4, 8, 1, 1, dtype=torch.bfloat16, device=DEV)
    F.conv2d(x, w1, padding=1)  # padded
    F.conv2d(x, torch.randn(4, 4, 1, 1, dtype=torch.bfloat16, device=DEV), groups=2)
    F.conv2d(x.contiguous(memory_format=torch.channels_last), w1)  # channels_last
    F.conv2d(x.float(), w1.float())  # float32: cudnn.allow_tf32's path
    assert taken == {"fwd": 0, "dgrad": 0, "wgrad": 0}


def test_weight_gradient_of_wide_layers_takes_the_path(taken):
    """Few pixels, many channels (ResNet-50's last stage): the same kernel, no layout
    copies, whatever the ratio of weights to activations."""
    x = torch.randn(2, 64, 2, 2, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    w = torch.randn(64, 64, 1, 1, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    F.conv2d(x, w).sum().backward()
    assert taken == {"fwd": 1, "dgrad": 1, "wgrad": 1}
    wr = w.detach().cpu().double().requires_grad_()
    F.conv2d(x.detach().cpu().double(), wr).sum().backward()
    torch.testing.assert_close(w.grad.cpu().double(), wr.grad, atol=0.1, rtol=2e-2)


@pytest.mark.parametrize(
    "stride,grad_layout", [(1, "same"), (2, "same"), (1, "nchw")], ids=["s1", "s2", "mixed"]
)
def test_channels_last_weight_gradient_takes_the_kernel(taken, stride, grad_layout):
    """A channels_last 1x1 convolution keeps the implicit GEMM forward and input gradient;
    its weight gradient is the 1x1 kernel reading the tensors in place (images follow
    each other: one long reduction), equal to the CPU's; a gradient in another layout
    than the input's is read by its own strides."""
    cl = torch.channels_last
    x = torch.randn(3, 40, 7, 6, dtype=torch.float64).contiguous(memory_format=cl)
    w = torch.randn(6, 40, 1, 1, dtype=torch.float64)  # 40 channels: not the flat stem
    y = F.conv2d(x, w, stride=stride)
    g = torch.randn_like(y)
    wr = w.clone().requires_grad_()
    F.conv2d(x, wr, stride=stride).backward(g)
    xd = x.to(torch.bfloat16).to(DEV)
    wd = w.to(torch.bfloat16).to(DEV).requires_grad_()
    yd = F.conv2d(xd, wd, stride=stride)
    assert yd.is_contiguous(memory_format=cl)
    gd = g.to(torch.bfloat16).to(DEV)
    gd = gd.contiguous() if grad_layout == "nchw" else gd.contiguous(memory_format=cl)
    yd.backward(gd)
    assert taken == {"fwd": 0, "dgrad": 0, "wgrad": 1}
    err = (wd.grad.cpu().double() - wr.grad).abs().max() / wr.grad.abs().max()
    assert err < 2e-2, err


def test_weight_gradient_of_a_channel_slice(taken):
    """An input that is a channel slice of a larger NCHW tensor (not contiguous, its
    pixels still one strided dim): the forward keeps the implicit GEMM, the weight
    gradient reads the slice in place by its strides."""
    base = torch.randn(2, 50, 5, 4, dtype=torch.float64)
    x = base[:, 5:45]
    w = torch.randn(6, 40, 1, 1, dtype=torch.float64)
    g = torch.randn(2, 6, 5, 4, dtype=torch.float64)
    wr = w.clone().requires_grad_()
    F.conv2d(x, wr).backward(g)
    xd = base.to(torch.bfloat16).to(DEV)[:, 5:45]
    assert not xd.is_contiguous()
    wd = w.to(torch.bfloat16).to(DEV).requires_grad_()
    F.conv2d(xd, wd).backward(g.to(torch.bfloat16).to(DEV))
    assert taken == {"fwd": 0, "dgrad": 0, "wgrad": 1}
    err = (wd.grad.cpu().double() - wr.grad).abs().max() / wr.grad.abs().max()
    assert err < 2e-2, err


def _wgrad_case(n=4, c=8, co=6, p=(6, 5)):
    x = torch.randn(n, c, *p, dtype=torch.float64)
    dy = torch.randn(n, co, *p, dtype=torch.float64)
    ref = torch.einsum("nop,ncp->oc", dy.flatten(2), x.flatten(2)).reshape(co, c, 1, 1)
    return x.to(torch.bfloat16).to(DEV), dy.to(torch.bfloat16).to(DEV), ref


@pytest.mark.parametrize("via", [0, 1], ids=["in_place", "via_channels_last"])
@pytest.mark.parametrize("pixels", [(6, 5), (4, 4)], ids=["tail", "no_tail"])
@pytest.mark.parametrize("split,launches", [(1, 1), (3, 2), (64, 2)])
def test_weight_gradient_slices(split, launches, pixels, via):
    """One slice is written straight into the gradient (one launch); more are float32
    partials summed in order and rounded once by the reduction's store (two launches),
    the same sum whatever the split up to rounding, and reproducible bit for bit. 30
    pixels: blocks of 16 per image, a masked tail in each; 16 pixels: one full block.
    `via`: both operands first copied to channels_last, then one reduction over all
    images' pixels."""
    from torch_ext.ops import _launch

    xd, dyd, ref = _wgrad_case(p=pixels)
    cfg = (16, 16, 16, 4, 2, split, via)
    before = _launch.launches()
    dw = conv_gemm.pointwise_weight_grad(dyd, xd, (6, 8, 1, 1), cfg)
    if not via:  # (the copies' launches are the copy op's, not counted here)
        assert _launch.launches() - before == launches
    assert dw.dtype == torch.bfloat16 and dw.shape == (6, 8, 1, 1)
    err = (dw.cpu().double() - ref).abs().max() / ref.abs().max()
    assert err < 2e-2, err
    again = conv_gemm.pointwise_weight_grad(dyd, xd, (6, 8, 1, 1), cfg)
    assert torch.equal(dw.cpu(), again.cpu())


def test_weight_gradient_tiles_cover_channels_past_one_tile():
    """Channel counts that are not multiples of the tile: masked rows and columns."""
    xd, dyd, ref = _wgrad_case(n=2, c=40, co=20, p=(3, 3))
    dw = conv_gemm.pointwise_weight_grad(dyd, xd, (20, 40, 1, 1), (16, 32, 16, 4, 2, 2, 0))
    err = (dw.cpu().double() - ref).abs().max() / ref.abs().max()
    assert err < 2e-2, err


@pytest.mark.parametrize("pick", ["gemm", "implicit"])
@pytest.mark.parametrize("stride,bias", [(1, True), (2, False)], ids=["s1_bias", "s2"])
def test_channels_last_pointwise_tunes_one_product_against_the_implicit_gemm(
    monkeypatch, pick, stride, bias
):
    """A channels_last 1x1 convolution offers the tuner one product over its pixels
    (the matrix products' kernels) beside the implicit GEMM, forward and input gradient,
    and beside the 1x1 weight-gradient kernel; either gives the CPU's forward and
    gradients, channels_last, a stride-2 shortcut's input gradient in its strided pixels."""
    offered = _choosing(monkeypatch, pick, lambda name: name.endswith("_cl") and pick == "gemm")
    monkeypatch.setattr(conv_gemm, "GEMM_WGRAD_CHANNELS", 16)  # these channels offer it too
    cl = torch.channels_last
    x = torch.randn(2, 24, 10, 6, dtype=torch.float64).contiguous(memory_format=cl)
    x.requires_grad_()
    w = torch.randn(16, 24, 1, 1, dtype=torch.float64, requires_grad=True)
    b = torch.randn(16, dtype=torch.float64, requires_grad=True) if bias else None
    y = F.conv2d(x, w, b, stride=stride)
    g = torch.randn_like(y)
    inputs = (x, w, b) if bias else (x, w)
    ref = torch.autograd.grad(y, inputs, g)
    dev = [t.detach().to(torch.bfloat16).to(DEV).requires_grad_() for t in inputs]
    dev[0] = dev[0].detach().contiguous(memory_format=cl).requires_grad_()
    yd = F.conv2d(dev[0], dev[1], dev[2] if bias else None, stride=stride)
    assert yd.is_contiguous(memory_format=cl) and yd.shape == y.shape
    got = torch.autograd.grad(yd, dev, g.to(torch.bfloat16).to(DEV).contiguous(memory_format=cl))
    assert got[0].is_contiguous(memory_format=cl)
    kinds = [k for k, _ in offered]
    assert {"pw_fwd_cl", "pw_dgrad_cl", "pw_wgrad_cl"} <= set(kinds), kinds
    first = {"pw_fwd_cl": "implicit", "pw_dgrad_cl": "implicit", "pw_wgrad_cl": "kernel"}
    assert all(c == [(first[k],), ("gemm",)] for k, c in offered if k.endswith("_cl"))
    for a, r in zip((yd, *got), (y, *ref)):
        err = (a.detach().cpu().double() - r).abs().max() / r.abs().max()
        assert err < 2e-2, (a.shape, err)


def test_narrow_channels_last_weight_gradients_keep_the_1x1_kernel(monkeypatch):
    """Under GEMM_WGRAD_CHANNELS channels in or out the product over the pixels is not
    offered (no split K there): the 1x1 kernel's tiles are tuned alone."""
    offered = _choosing(monkeypatch, "gemm", lambda name: name.endswith("_cl"))
    cl = torch.channels_last
    x = torch.randn(2, 24, 6, 6).to(torch.bfloat16).contiguous(memory_format=cl).to(DEV)
    dy = torch.randn(2, 300, 6, 6).to(torch.bfloat16).contiguous(memory_format=cl).to(DEV)
    dw = conv_gemm.pointwise_weight_grad(dy, x, (300, 24, 1, 1))
    kinds = [k for k, _ in offered]
    assert "pw_wgrad_cl" not in kinds and "wgrad1x1" in kinds, kinds
    ref = torch.einsum("nchw,ndhw->cd", dy.cpu().double(), x.cpu().double())
    err = (dw.cpu().double().reshape(300, 24) - ref).abs().max() / ref.abs().max()
    assert err < 2e-2, err
