"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
resample family: interpolation (nearest, linear, bilinear, bicubic,
trilinear, antialias), forward and backward."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, REGISTERED, assert_close, grads, rand


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_upsample_nearest(dtype):
    x = rand((2, 3, 5, 4), dtype)
    grads(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), x, dtype=dtype, reduce=4)
    grads(lambda t: F.interpolate(t, size=(7, 9), mode="nearest"), x, dtype=dtype, reduce=4)
    grads(lambda t: F.interpolate(t, size=(3, 2), mode="nearest"), x, dtype=dtype)
    grads(
        lambda t: F.interpolate(t, scale_factor=(1.5, 2.25), mode="nearest"),
        x,
        dtype=dtype,
        reduce=4,
    )


DTYPES = [F32, F16, BF16]


CL = torch.channels_last


def _layout(kind):
    """Input of the op inside fn, as both runs (device and CPU) see it."""
    return {
        "contig": lambda t: t,
        "channels_last": lambda t: t.contiguous(memory_format=CL)
        if t.dim() == 4
        else t.permute(1, 2, 0).contiguous().permute(2, 0, 1),  # (C, H, W) with C innermost
        "transposed": lambda t: t.transpose(-1, -2),
    }[kind]


SIZES_2D = {  # input planes are 5 x 6
    "size_up": dict(size=(11, 9)),
    "size_down": dict(size=(3, 4)),
    "size_mixed": dict(size=(2, 13)),
    "size_same": dict(size=(5, 6)),
    "scale_up": dict(scale_factor=2.0),
    "scale_mixed": dict(scale_factor=(0.6, 2.3)),
    "scale_kept_up": dict(scale_factor=(1.7, 2.5), recompute_scale_factor=False),
    "scale_kept_down": dict(scale_factor=(0.45, 0.7), recompute_scale_factor=False),
    "scale_kept_same": dict(scale_factor=1.1, recompute_scale_factor=False),  # out == in
}


SIZES_1D = {
    "size_up": dict(size=17),
    "size_down": dict(size=4),
    "size_same": dict(size=6),
    "scale_up": dict(scale_factor=3.0),
    "scale_down": dict(scale_factor=0.5),
    "scale_kept_up": dict(scale_factor=2.2, recompute_scale_factor=False),
    "scale_kept_down": dict(scale_factor=0.45, recompute_scale_factor=False),
    "scale_kept_double": dict(scale_factor=2.1, recompute_scale_factor=False),
    "scale_kept_same": dict(scale_factor=1.1, recompute_scale_factor=False),
}


# The backward sums the gradients of the outputs that one input element
# feeds (up to 4 x 4 here): atol scaled by that.
INTERP_REDUCE = 16


# PyTorch's CPU 1-d nearest backward copies/halves indices where out == in or
# out == 2 * in whatever the scale, its forward does not: its gradient there
# is not the forward's adjoint (test_nearest_1d_kept_scale_is_adjoint).
MODES_1D = [("linear", False), ("linear", True), ("nearest", None), ("nearest-exact", None)]


CASES_1D = [
    (c, m, a)
    for c in SIZES_1D
    for m, a in MODES_1D
    if not (m == "nearest" and c in ("scale_kept_double", "scale_kept_same"))
]


def _bicubic_reference(x, scale):
    """PyTorch's bicubic formula in float64 torch ops (align_corners=False, a
    given scale, no copy rule): its gradient is the forward's adjoint."""

    def taps(size_in, size_out):
        src = (torch.arange(size_out, dtype=torch.float64) + 0.5) * scale - 0.5
        i = src.floor().long().clamp(max=size_in - 1)
        t = (src - i).clamp(0, 1)
        A = -0.75
        u, v = t + 1, 1 - t
        w = torch.stack(
            [
                ((A * u - 5 * A) * u + 8 * A) * u - 4 * A,
                ((A + 2) * t - (A + 3)) * t * t + 1,
                ((A + 2) * v - (A + 3)) * v * v + 1,
                ((A * (v + 1) - 5 * A) * (v + 1) + 8 * A) * (v + 1) - 4 * A,
            ],
            1,
        )
        idx = (i[:, None] - 1 + torch.arange(4)).clamp(0, size_in - 1)
        m = torch.zeros(size_out, size_in, dtype=torch.float64)
        return m.index_put_(
            (torch.arange(size_out)[:, None].expand(-1, 4), idx), w, accumulate=True
        )

    H, W = x.shape[-2:]
    mh, mw = taps(H, H), taps(W, W)
    return mh @ x @ mw.T


CL3 = torch.channels_last_3d


SIZES_3D = {
    "size_mixed": dict(size=(7, 3, 9)),
    "scale_up": dict(scale_factor=2.0),
    "scale_mixed": dict(scale_factor=(0.5, 1.5, 2.5)),
    "scale_kept": dict(scale_factor=(1.7, 0.6, 2.3), recompute_scale_factor=False),
}


F64_OPS = {
    "adaptive_avg": lambda t: torch._adaptive_avg_pool2d(t, (3, 4)),
    "adaptive_max": lambda t: F.adaptive_max_pool2d(t, (3, 4)),
    "bilinear": lambda t: F.interpolate(
        t, scale_factor=1.7, mode="bilinear", recompute_scale_factor=False
    ),
    "bilinear_align": lambda t: F.interpolate(t, size=(7, 3), mode="bilinear", align_corners=True),
    "trilinear": lambda t: F.interpolate(t.unsqueeze(2), size=(2, 7, 9), mode="trilinear"),
    "nearest_exact": lambda t: F.interpolate(t, size=(7, 9), mode="nearest-exact"),
    "reflect": lambda t: F.pad(t, (2, 1, 3, 0), mode="reflect"),
    "replicate": lambda t: F.pad(t, (2, 1, 3, 0), mode="replicate"),
    "unfold": lambda t: F.unfold(t, 2, padding=1),
    "fold": lambda t: F.fold(t.reshape(2, 4, 15), (4, 11), 2, stride=(1, 2)),
}


AA_SIZES = {
    "down": dict(size=(3, 4)),
    "mixed": dict(size=(2, 9)),
    "up": dict(size=(11, 13)),
    "one": dict(size=(1, 1)),
    "scale": dict(scale_factor=0.35),
    "scale_kept": dict(scale_factor=(0.3, 1.7), recompute_scale_factor=False),
}


def test_ops_are_registered():
    ops = """_adaptive_avg_pool2d _adaptive_avg_pool2d_backward adaptive_avg_pool2d.out
    adaptive_max_pool2d.out adaptive_max_pool2d_backward.grad_input upsample_bilinear2d.out
    upsample_bilinear2d_backward.grad_input upsample_linear1d.out upsample_linear1d_backward.grad_input
    upsample_nearest1d.out upsample_nearest1d_backward.grad_input _upsample_nearest_exact1d.out
    _upsample_nearest_exact1d_backward.grad_input _upsample_nearest_exact2d.out
    _upsample_nearest_exact2d_backward.grad_input reflection_pad2d reflection_pad2d.out
    reflection_pad2d_backward reflection_pad2d_backward.grad_input replication_pad2d.out
    replication_pad2d_backward replication_pad2d_backward.grad_input reflection_pad1d.out
    reflection_pad1d_backward.grad_input replication_pad1d.out replication_pad1d_backward.grad_input
    im2col im2col.out col2im col2im.out _adaptive_avg_pool3d _adaptive_avg_pool3d_backward
    adaptive_avg_pool3d.out adaptive_max_pool3d.out adaptive_max_pool3d_backward.grad_input
    upsample_trilinear3d.out upsample_trilinear3d_backward.grad_input upsample_nearest3d.out
    upsample_nearest3d_backward.grad_input _upsample_nearest_exact3d.out
    _upsample_nearest_exact3d_backward.grad_input reflection_pad3d.out
    reflection_pad3d_backward.grad_input replication_pad3d.out replication_pad3d_backward
    replication_pad3d_backward.grad_input upsample_bicubic2d.out
    upsample_bicubic2d_backward.grad_input grid_sampler_3d
    grid_sampler_3d_backward _upsample_bilinear2d_aa.out _upsample_bilinear2d_aa_backward.grad_input
    _upsample_bicubic2d_aa.out _upsample_bicubic2d_aa_backward.grad_input""".split()
    assert sorted(set(ops) - REGISTERED) == []


@pytest.mark.parametrize("case", list(SIZES_2D))
@pytest.mark.parametrize(
    "mode,align",
    [("bilinear", False), ("bilinear", True), ("nearest", None), ("nearest-exact", None)],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_2d(case, mode, align, dtype):
    x = rand((2, 3, 5, 6), dtype)
    kw = dict(SIZES_2D[case], mode=mode)
    if align is not None:
        kw["align_corners"] = align
    grads(lambda t: F.interpolate(t, **kw), x, dtype=dtype, reduce=INTERP_REDUCE)


@pytest.mark.parametrize("case,mode,align", CASES_1D)
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_1d(case, mode, align, dtype):
    x = rand((2, 3, 6), dtype)
    kw = dict(SIZES_1D[case], mode=mode)
    if align is not None:
        kw["align_corners"] = align
    grads(lambda t: F.interpolate(t, **kw), x, dtype=dtype, reduce=INTERP_REDUCE)


@pytest.mark.parametrize("case", [c for c in SIZES_2D if c != "scale_kept_same"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_bicubic(case, align, dtype):
    x = rand((2, 3, 5, 6), dtype)
    kw = dict(SIZES_2D[case], mode="bicubic", align_corners=align)
    # weights reach 1.3 in size and sum to 1: atol scaled by 2 (forward), 16 (backward)
    grads(lambda t: F.interpolate(t, **kw), x, dtype=dtype, reduce=2 * INTERP_REDUCE)


def test_bicubic_layouts_batch1_uint8_and_kept_scale():
    grads(
        lambda t: F.interpolate(t.contiguous(memory_format=CL), size=(9, 4), mode="bicubic"),
        rand((1, 4, 6, 7), F32),
        reduce=16,
    )
    grads(
        lambda t: F.interpolate(
            t.transpose(-1, -2), scale_factor=1.5, mode="bicubic", align_corners=True
        ),
        rand((3, 2, 5, 4), F32),
        reduce=16,
    )
    # out == in with a scale: the forward as PyTorch's CPU (interpolated, not copied),
    # the gradient its adjoint (PyTorch's CPU backward copies there)
    x = rand((2, 3, 5, 6), F32)
    kw = dict(scale_factor=1.1, mode="bicubic", recompute_scale_factor=False)
    xd = x.to(DEV).requires_grad_()
    y = F.interpolate(xd, **kw)
    torch.testing.assert_close(y.detach().cpu(), F.interpolate(x, **kw), rtol=1e-5, atol=1e-5)
    g = torch.randn(y.shape, dtype=torch.float64)
    y.backward(g.float().to(DEV))
    ref = lambda t: _bicubic_reference(t, 1 / 1.1)  # noqa: E731
    torch.testing.assert_close(
        ref(x.double()), F.interpolate(x.double(), **kw)
    )  # the reference is right
    vjp = torch.autograd.functional.vjp(ref, x.double(), g)[1]
    torch.testing.assert_close(xd.grad.cpu().double(), vjp, rtol=1e-5, atol=1e-5)
    # uint8: clamped, rounded to the nearest (PyTorch's CPU rounds between passes too)
    xu = torch.randint(0, 256, (2, 3, 5, 6), dtype=torch.uint8)
    for size in [(7, 9), (3, 4)]:
        res = F.interpolate(xu.to(DEV), size=size, mode="bicubic").cpu()
        exact = F.interpolate(xu.double(), size=size, mode="bicubic").clamp(0, 255)
        assert res.dtype == torch.uint8 and (res.double() - exact).abs().max() <= 0.5 + 1e-3


@pytest.mark.parametrize("scale", [2.1, 1.1])  # out == 2 * in, out == in
def test_nearest_1d_kept_scale_is_adjoint(scale):
    """Forward as on CPU; gradient the forward's adjoint (as PyTorch's CUDA
    kernels give it), which PyTorch's CPU backward is not here."""
    x = rand((2, 3, 6), F32)
    y = F.interpolate(x, scale_factor=scale, mode="nearest", recompute_scale_factor=False)
    src = (
        F.interpolate(
            torch.arange(6.0).expand(1, 1, 6),
            scale_factor=scale,
            mode="nearest",
            recompute_scale_factor=False,
        )
        .long()
        .flatten()
    )
    g = torch.randn(y.shape)
    xd = x.to(DEV).requires_grad_()
    yd = F.interpolate(xd, scale_factor=scale, mode="nearest", recompute_scale_factor=False)
    yd.backward(g.to(DEV))
    assert torch.equal(yd.detach().cpu(), y)
    expected = torch.zeros(2, 3, 6).index_add_(2, src, g)
    torch.testing.assert_close(xd.grad.cpu(), expected)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "nearest-exact"])
def test_interpolate_layouts_and_batch1(layout, mode):
    f = _layout(layout)
    kw = dict(align_corners=False) if mode == "bilinear" else {}
    grads(
        lambda t: F.interpolate(f(t), size=(9, 4), mode=mode, **kw),
        rand((1, 4, 6, 7), F32),
        reduce=8,
    )
    grads(
        lambda t: F.interpolate(f(t), scale_factor=1.5, mode=mode, **kw),
        rand((3, 2, 5, 4), F32),
        reduce=8,
    )
    out = F.interpolate(
        rand((2, 3, 4, 4), F32).to(DEV).contiguous(memory_format=CL), size=(6, 6), mode=mode, **kw
    )
    assert out.is_contiguous(memory_format=CL)  # the meta's layout, filled through a temporary


@pytest.mark.parametrize("mode", ["linear", "nearest", "nearest-exact"])
def test_interpolate_1d_noncontiguous(mode):
    kw = dict(align_corners=True) if mode == "linear" else {}
    grads(
        lambda t: F.interpolate(t.transpose(0, 1), size=11, mode=mode, **kw),
        rand((3, 2, 7), F32),
        reduce=8,
    )


def test_interpolate_errors():
    x = torch.randn(1, 2, 4, 4)
    with pytest.raises(RuntimeError, match="expected input_size equals to 4"):
        torch.ops.aten.upsample_bilinear2d(x[0].to(DEV), [8, 8], False)
    with pytest.raises(RuntimeError, match="should be greater than 0"):
        torch.ops.aten.upsample_bilinear2d(x.to(DEV), [0, 8], False)
    with pytest.raises(RuntimeError, match="should be greater than 0"):
        torch.ops.aten.upsample_bilinear2d(x, [0, 8], False)  # as on CPU
    with pytest.raises(RuntimeError, match="expected input_size equals to 3"):
        torch.ops.aten.upsample_linear1d(x.to(DEV), [8], False)
    with pytest.raises(RuntimeError, match="Expected grad_output"):
        torch.ops.aten.upsample_bilinear2d_backward(
            torch.randn(1, 2, 7, 8).to(DEV), [8, 8], [1, 2, 4, 4], False
        )


def test_interpolate_out_variants():
    x, g = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 7, 9)

    def same(fn, *args):
        res = fn(*[a.to(DEV) for a in args])
        torch.testing.assert_close(res.cpu(), fn(*args), rtol=1e-5, atol=1e-5)

    same(
        lambda t: torch.ops.aten.upsample_bilinear2d.out(
            t, [7, 9], True, out=torch.empty(2, 3, 7, 9, device=t.device)
        ),
        x,
    )
    same(
        lambda gg: torch.ops.aten.upsample_bilinear2d_backward.grad_input(
            gg,
            [7, 9],
            [2, 3, 5, 4],
            False,
            1.5,
            2.0,
            grad_input=torch.empty(2, 3, 5, 4, device=gg.device),
        ),
        g,
    )
    same(
        lambda t: torch.ops.aten._upsample_nearest_exact2d.out(
            t, [7, 9], None, None, out=torch.empty(2, 3, 7, 9, device=t.device)
        ),
        x,
    )
    same(
        lambda t: torch.ops.aten.upsample_linear1d.out(
            t, [9], False, None, out=torch.empty(2, 3, 9, device=t.device)
        ),
        x[:, :, 0],
    )
    same(
        lambda t: torch.ops.aten.upsample_nearest1d.out(
            t, [9], None, out=torch.empty(2, 3, 9, device=t.device)
        ),
        x[:, :, 0],
    )


@pytest.mark.parametrize("align", [False, True])
def test_bilinear_uint8(align):
    """uint8 images: rounded to the nearest value; PyTorch's CPU kernel works
    in fixed point, so results may differ from it by one."""
    x = torch.randint(0, 256, (2, 3, 5, 6), dtype=torch.uint8)
    for size in [(7, 9), (3, 4), (11, 13)]:
        res = F.interpolate(x.to(DEV), size=size, mode="bilinear", align_corners=align).cpu()
        exact = F.interpolate(x.double(), size=size, mode="bilinear", align_corners=align)
        assert res.dtype == torch.uint8
        assert (res.double() - exact).abs().max() <= 0.5 + 1e-3
        cpu = F.interpolate(x, size=size, mode="bilinear", align_corners=align)
        assert (res.int() - cpu.int()).abs().max() <= 1


def test_bilinear_align_corners_values():
    # The corners of align_corners=True land exactly on the input's corners.
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    y = F.interpolate(x.to(DEV), size=(7, 7), mode="bilinear", align_corners=True).cpu()
    assert y[0, 0, 0, 0] == 0 and y[0, 0, -1, -1] == 15 and y[0, 0, 0, -1] == 3
    torch.testing.assert_close(y[0, 0, 1, 0], torch.tensor(2.0))  # halfway between rows 0 and 1


@pytest.mark.parametrize("case", list(SIZES_3D))
@pytest.mark.parametrize(
    "mode,align",
    [("trilinear", False), ("trilinear", True), ("nearest", None), ("nearest-exact", None)],
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_3d(case, mode, align, dtype):
    x = rand((2, 2, 3, 4, 5), dtype)
    kw = dict(SIZES_3D[case], mode=mode)
    if align is not None:
        kw["align_corners"] = align
    grads(lambda t: F.interpolate(t, **kw), x, dtype=dtype, reduce=4 * INTERP_REDUCE)


@pytest.mark.parametrize("mode", ["trilinear", "nearest", "nearest-exact"])
def test_interpolate_3d_layouts_and_batch1(mode):
    kw = dict(align_corners=False) if mode == "trilinear" else {}
    grads(
        lambda t: F.interpolate(t.contiguous(memory_format=CL3), size=(5, 2, 7), mode=mode, **kw),
        rand((1, 3, 3, 4, 5), F32),
        reduce=16,
    )
    grads(
        lambda t: F.interpolate(t.transpose(-1, -3), scale_factor=1.5, mode=mode, **kw),
        rand((2, 2, 3, 4, 5), F32),
        reduce=16,
    )


@pytest.mark.parametrize("scale", [2.1, 1.1])  # out == 2 * in, out == in along W
def test_nearest_3d_kept_scale_is_adjoint(scale):
    """As in 1-d: forward as on CPU, gradient the forward's adjoint."""
    sf = (1.0, 1.0, scale)
    x = rand((2, 3, 2, 2, 6), F32)
    y = F.interpolate(x, scale_factor=sf, mode="nearest", recompute_scale_factor=False)
    src = (
        F.interpolate(
            torch.arange(6.0).expand(1, 1, 1, 1, 6),
            scale_factor=sf,
            mode="nearest",
            recompute_scale_factor=False,
        )
        .long()
        .flatten()
    )
    g = torch.randn(y.shape)
    xd = x.to(DEV).requires_grad_()
    yd = F.interpolate(xd, scale_factor=sf, mode="nearest", recompute_scale_factor=False)
    yd.backward(g.to(DEV))
    assert torch.equal(yd.detach().cpu(), y)
    torch.testing.assert_close(xd.grad.cpu(), torch.zeros(2, 3, 2, 2, 6).index_add_(4, src, g))


@pytest.mark.parametrize("name", list(F64_OPS))
def test_float64_to_float64_precision(name):
    """float64 computes in float64 (sums, weights and source positions)."""
    grads(F64_OPS[name], rand((2, 3, 5, 4), torch.float64), dtype=torch.float64, reduce=4)


@pytest.mark.parametrize("case", list(AA_SIZES))
@pytest.mark.parametrize(
    "mode,align", [("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True)]
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_interpolate_antialias(case, mode, align, dtype):
    x = rand((2, 3, 7, 6), dtype)
    kw = dict(AA_SIZES[case], mode=mode, align_corners=align, antialias=True)
    if dtype == F32:
        grads(lambda t: F.interpolate(t, **kw), x, dtype=dtype, reduce=2 * INTERP_REDUCE)
        return
    # PyTorch's CPU has no fp16/bf16 antialiasing (its CUDA has): against float64 only
    xd = x.to(DEV).requires_grad_()
    y = F.interpolate(xd, **kw)
    g = torch.linspace(-1, 1, y.numel(), dtype=torch.float64).reshape(y.shape)
    y.backward(g.to(device=DEV, dtype=dtype))
    x64 = x.double().requires_grad_()
    y64 = F.interpolate(x64, **kw)
    y64.backward(g)
    assert y.dtype == dtype and xd.grad.dtype == dtype
    assert_close(y, y64, dtype, reduce=2, msg="forward")
    assert_close(xd.grad, x64.grad, dtype, reduce=2 * INTERP_REDUCE, msg="grad")


def test_interpolate_antialias_layouts_uint8_and_kept_size():
    grads(
        lambda t: F.interpolate(
            t.contiguous(memory_format=CL), size=(4, 3), mode="bilinear", antialias=True
        ),
        rand((1, 3, 9, 8), F32),
        reduce=16,
    )
    grads(
        lambda t: F.interpolate(t.transpose(-1, -2), size=(5, 2), mode="bicubic", antialias=True),
        rand((2, 2, 6, 9), F32),
        reduce=16,
    )
    for mode in ("bilinear", "bicubic"):
        # out == in along H with a scale: forward as PyTorch's CPU (that dim copied),
        # gradient the adjoint: <f(x), g> == <x, grad>
        kw = dict(scale_factor=(1.1, 0.5), mode=mode, antialias=True, recompute_scale_factor=False)
        x = rand((2, 3, 7, 6), torch.float64)
        xd = x.to(DEV).requires_grad_()
        y = F.interpolate(xd, **kw)
        torch.testing.assert_close(y.detach().cpu(), F.interpolate(x, **kw))
        g = torch.randn(y.shape, dtype=torch.float64)
        y.backward(g.to(DEV))
        torch.testing.assert_close((y.detach().cpu() * g).sum(), (x * xd.grad.cpu()).sum())
        # uint8: clamped, rounded to the nearest (PyTorch's CPU rounds between its passes)
        xu = torch.randint(0, 256, (2, 3, 17, 15), dtype=torch.uint8)
        for size in [(5, 7), (30, 20)]:
            res = F.interpolate(xu.to(DEV), size=size, mode=mode, antialias=True).cpu()
            exact = F.interpolate(xu.double(), size=size, mode=mode, antialias=True).clamp(0, 255)
            assert res.dtype == torch.uint8 and (res.double() - exact).abs().max() <= 0.5 + 1e-3


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: F.interpolate(t, scale_factor=1.1, mode="bicubic", recompute_scale_factor=False),
        lambda t: F.interpolate(
            t, scale_factor=(1.1, 2.1), mode="nearest", recompute_scale_factor=False
        ),
        lambda t: F.interpolate(
            t[:, :, 0], scale_factor=2.1, mode="nearest", recompute_scale_factor=False
        ),
        lambda t: F.interpolate(
            t, scale_factor=(1.1, 0.5), mode="bicubic", antialias=True, recompute_scale_factor=False
        ),
    ],
)
def test_gradients_are_adjoints(fn):
    """<f(x), g> == <x, f'(x)^T g> for these linear maps, where PyTorch's CPU
    backward is not its forward's adjoint."""
    x = rand((2, 3, 7, 6), torch.float64)
    xd = x.to(DEV).requires_grad_()
    y = fn(xd)
    g = torch.randn(y.shape, dtype=torch.float64)
    y.backward(g.to(DEV))
    torch.testing.assert_close((y.detach().cpu() * g).sum(), (x * xd.grad.cpu()).sum())
