"""Spatial ops (torch_ext/ops/pooling, torch_ext/ops/resample, im2col in convolution.py): adaptive pooling, interpolation,
reflection/replication padding, unfold/fold -- forward and autograd backward
against the CPU (float64 reference, then the same-dtype CPU result for
fp16/bf16), over several shapes, layouts and dtypes, and their errors."""

import pytest
import torch
import torch.nn.functional as F

from helpers import DEV, REGISTERED, assert_close, grads, rand, train_matches_cpu

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
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


# -- adaptive pooling -----------------------------------------------------------

ADAPTIVE_SIZES = [(1, 1), (3, 4), (7, 9), (10, 13), (5, 2)]  # input planes are 7 x 9


@pytest.mark.parametrize("size", ADAPTIVE_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool2d(size, dtype):
    x = rand((2, 3, 7, 9), dtype)
    reduce = max(1, (7 // size[0] + 1) * (9 // size[1] + 1))
    # torch._adaptive_avg_pool2d itself: F.adaptive_avg_pool2d sends (1, 1) to mean.
    grads(lambda t: torch._adaptive_avg_pool2d(t, size), x, dtype=dtype, reduce=reduce)
    grads(lambda t: F.adaptive_avg_pool2d(t, size), x, dtype=dtype, reduce=reduce)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_adaptive_avg_pool2d_layouts_batch1_and_3d(layout):
    f = _layout(layout)
    grads(lambda t: torch._adaptive_avg_pool2d(f(t), (4, 3)), rand((1, 5, 8, 6), F32), reduce=9)
    grads(lambda t: torch._adaptive_avg_pool2d(f(t), (1, 1)), rand((1, 5, 8, 6), F32), reduce=48)
    grads(lambda t: F.adaptive_avg_pool2d(f(t), (5, 11)), rand((3, 8, 6), F32), reduce=4)
    out = torch._adaptive_avg_pool2d(
        rand((2, 3, 6, 6), F32).to(DEV).contiguous(memory_format=CL), (2, 2)
    )
    assert out.is_contiguous(memory_format=CL)  # as PyTorch: the input's memory format


@pytest.mark.parametrize("size", ADAPTIVE_SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_max_pool2d(size, dtype):
    x = rand((2, 3, 7, 9), dtype)
    grads(lambda t: F.adaptive_max_pool2d(t, size), x, dtype=dtype)
    v, i = F.adaptive_max_pool2d(x.to(DEV), size, return_indices=True)
    rv, ri = F.adaptive_max_pool2d(x, size, return_indices=True)
    assert i.dtype == torch.int64 and torch.equal(i.cpu(), ri)  # ties: the first, as on CPU
    assert torch.equal(v.cpu(), rv)


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_adaptive_max_pool2d_layouts_batch1_and_3d(layout):
    f = _layout(layout)
    grads(lambda t: F.adaptive_max_pool2d(f(t), (4, 3)), rand((1, 5, 8, 6), F32))
    grads(lambda t: F.adaptive_max_pool2d(f(t), (1, 1)), rand((1, 5, 8, 6), F32))
    grads(lambda t: F.adaptive_max_pool2d(f(t), (9, 11)), rand((3, 8, 6), F32))
    x = rand((2, 3, 8, 6), F32)
    _, i = F.adaptive_max_pool2d(f(x.to(DEV)), (3, 5), return_indices=True)
    assert torch.equal(i.cpu(), F.adaptive_max_pool2d(f(x), (3, 5), return_indices=True)[1])


def test_adaptive_max_pool2d_nan_and_inf():
    x = torch.randn(1, 2, 6, 6)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 2, 0] = float("nan")  # the same 3x3 window: the last NaN wins
    x[0, 1, :3, :3] = float("-inf")  # an all -inf window: its first index
    v, i = F.adaptive_max_pool2d(x.to(DEV), (2, 2), return_indices=True)
    rv, ri = F.adaptive_max_pool2d(x, (2, 2), return_indices=True)
    torch.testing.assert_close(v.cpu(), rv, equal_nan=True)
    assert torch.equal(i.cpu(), ri)
    assert ri[0, 0, 0, 0] == 12 and ri[0, 1, 0, 0] == 0


def test_adaptive_pool_errors():
    with pytest.raises(RuntimeError, match="Expected 3D or 4D tensor"):
        torch._adaptive_avg_pool2d(torch.randn(4, 4).to(DEV), (2, 2))
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        torch._adaptive_avg_pool2d(torch.randn(1, 3, 0, 4).to(DEV), (2, 2))
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        torch._adaptive_avg_pool2d(torch.randn(1, 3, 0, 4), (2, 2))  # as on CPU
    with pytest.raises(RuntimeError, match="3D or 4D"):
        torch.ops.aten.adaptive_max_pool2d(torch.randn(4, 4).to(DEV), [2, 2])
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten._adaptive_avg_pool2d_backward(
            torch.randn(2, 2, 2, 2).to(DEV), torch.randn(2, 3, 5, 5).to(DEV)
        )


# -- interpolation ----------------------------------------------------------------

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


# -- padding --------------------------------------------------------------------

PADS_2D = {
    "all": (1, 2, 3, 2),
    "wide": (4, 4, 0, 0),
    "tall": (0, 0, 4, 1),
    "one": (1, 1, 1, 1),
    "zero": (0, 0, 0, 0),
}
PADS_2D_REPLICATE = {**PADS_2D, "big": (7, 0, 2, 9), "negative": (-1, 2, 1, -2)}


@pytest.mark.parametrize(
    "mode,case", [("reflect", c) for c in PADS_2D] + [("replicate", c) for c in PADS_2D_REPLICATE]
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_2d(mode, case, dtype):
    p = PADS_2D_REPLICATE[case]
    x = rand((2, 3, 5, 6), dtype)
    grads(lambda t: F.pad(t, p, mode=mode), x, dtype=dtype, reduce=10)
    grads(lambda t: F.pad(t, p, mode=mode), rand((3, 5, 6), dtype), dtype=dtype, reduce=10)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("pad", [(2, 3), (5, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_1d(mode, pad, dtype):
    grads(lambda t: F.pad(t, pad, mode=mode), rand((2, 3, 6), dtype), dtype=dtype, reduce=6)
    grads(lambda t: F.pad(t, pad, mode=mode), rand((3, 6), dtype), dtype=dtype, reduce=6)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_pad_layouts_batch1_and_ints(mode, layout):
    f = _layout(layout)
    grads(lambda t: F.pad(f(t), (2, 1, 3, 3), mode=mode), rand((1, 4, 5, 6), F32), reduce=4)
    grads(lambda t: F.pad(t.transpose(0, 1), (3, 2), mode=mode), rand((5, 2, 4), F32), reduce=4)
    xi = torch.randint(-100, 100, (2, 3, 5, 6), dtype=torch.int64)
    assert torch.equal(
        F.pad(xi.to(DEV), (2, 1, 3, 3), mode=mode).cpu(), F.pad(xi, (2, 1, 3, 3), mode=mode)
    )


def test_replicate_negative_1d_and_reflect_values():
    grads(lambda t: F.pad(t, (-2, 3), mode="replicate"), rand((2, 3, 6), F32), reduce=4)
    x = torch.arange(4.0).reshape(1, 1, 4)
    assert F.pad(x.to(DEV), (3, 2), mode="reflect").cpu().flatten().tolist() == [
        3,
        2,
        1,
        0,
        1,
        2,
        3,
        2,
        1,
    ]


def test_pad_errors():
    x = torch.randn(1, 2, 4, 5)
    with pytest.raises(
        RuntimeError, match="Padding size should be less than the corresponding input"
    ):
        F.pad(x, (5, 0, 0, 0), mode="reflect")  # as on CPU
    with pytest.raises(
        RuntimeError, match="Padding size should be less than the corresponding input"
    ):
        F.pad(x.to(DEV), (5, 0, 0, 0), mode="reflect")
    with pytest.raises(
        RuntimeError, match="Padding size should be less than the corresponding input"
    ):
        F.pad(x.to(DEV), (1, 1, 0, 4), mode="reflect")
    with pytest.raises(
        RuntimeError, match="Padding size should be less than the corresponding input"
    ):
        F.pad(x[0].to(DEV), (0, 5), mode="reflect")  # 1-d: PyTorch's meta
    for t in (x, x.to(DEV)):  # PyTorch's meta, on CPU too
        with pytest.raises(RuntimeError, match="negative dimension"):
            F.pad(t, (-3, -3, 0, 0), mode="replicate")
    with pytest.raises(RuntimeError, match="too small"):
        torch.ops.aten.reflection_pad2d(x.to(DEV), [-3, -3, 0, 0])
    with pytest.raises(RuntimeError, match="3D or 4D"):
        torch.ops.aten.reflection_pad2d(torch.randn(4, 5).to(DEV), [1, 1, 1, 1])
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten.reflection_pad2d_backward(
            torch.randn(1, 2, 4, 5).to(DEV), x.to(DEV), [1, 1, 1, 1]
        )
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten.replication_pad2d_backward(
            torch.randn(1, 2, 4, 5).to(DEV), x.to(DEV), [1, 1, 1, 1]
        )


def test_pad_out_variants():
    x, g = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 7, 8)

    def same(fn, *args):
        res = fn(*[a.to(DEV) for a in args])
        torch.testing.assert_close(res.cpu(), fn(*args), rtol=1e-6, atol=1e-6)

    same(
        lambda t: torch.ops.aten.reflection_pad2d.out(
            t, [1, 2, 2, 1], out=torch.empty(0, device=t.device)
        ),
        x,
    )
    same(
        lambda t: torch.ops.aten.replication_pad2d.out(
            t, [1, 2, 2, 1], out=torch.empty(2, 3, 7, 8, device=t.device)
        ),
        x,
    )
    for op in (torch.ops.aten.reflection_pad2d_backward, torch.ops.aten.replication_pad2d_backward):
        same(
            lambda gg, t, op=op: op.grad_input(
                gg, t, [1, 2, 2, 1], grad_input=torch.empty(0, device=t.device)
            ),
            g,
            x,
        )
    same(
        lambda t: torch.ops.aten.reflection_pad1d.out(
            t, [3, 1], out=torch.empty(2, 3, 9, device=t.device)
        ),
        x[:, :, 0],
    )


# -- unfold / fold (im2col / col2im) ---------------------------------------------

UNFOLD = {
    "k3": dict(kernel_size=3),
    "k2x3_dil_pad_stride": dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
    "k1": dict(kernel_size=1),
    "k_whole": dict(kernel_size=(5, 6)),
    "stride3_pad2": dict(kernel_size=2, stride=3, padding=2),
}


@pytest.mark.parametrize("case", list(UNFOLD))
@pytest.mark.parametrize("dtype", DTYPES)
def test_unfold(case, dtype):
    kw = UNFOLD[case]
    grads(lambda t: F.unfold(t, **kw), rand((2, 3, 5, 6), dtype), dtype=dtype, reduce=9)
    grads(lambda t: F.unfold(t, **kw), rand((3, 5, 6), dtype), dtype=dtype, reduce=9)  # no batch


@pytest.mark.parametrize("case", list(UNFOLD))
@pytest.mark.parametrize("dtype", DTYPES)
def test_fold(case, dtype):
    kw = UNFOLD[case]
    out_size = (5, 6)
    L = F.unfold(torch.zeros(1, 1, *out_size), **kw).shape[-1]
    k = kw["kernel_size"]
    kp = k * k if isinstance(k, int) else k[0] * k[1]
    grads(lambda t: F.fold(t, out_size, **kw), rand((2, 2 * kp, L), dtype), dtype=dtype, reduce=9)
    grads(lambda t: F.fold(t, out_size, **kw), rand((2 * kp, L), dtype), dtype=dtype, reduce=9)


def test_unfold_fold_noncontiguous_and_batch1():
    grads(
        lambda t: F.unfold(t.contiguous(memory_format=CL), (2, 3), padding=1),
        rand((1, 4, 5, 6), F32),
    )
    grads(lambda t: F.unfold(t.transpose(-1, -2), 3, stride=2), rand((2, 3, 7, 5), F32))
    grads(lambda t: F.fold(t.transpose(-1, -2), (4, 5), 2), rand((1, 12, 12), F32), reduce=4)
    # unfold then fold: each pixel times the number of windows covering it
    x = rand((2, 3, 6, 6), F32)
    y = F.fold(F.unfold(x.to(DEV), 3, padding=1), (6, 6), 3, padding=1).cpu()
    torch.testing.assert_close(y, F.fold(F.unfold(x, 3, padding=1), (6, 6), 3, padding=1))


def test_unfold_fold_errors_and_out():
    x = torch.randn(1, 2, 4, 4)
    with pytest.raises(RuntimeError, match="must be at least one"):
        F.unfold(x.to(DEV), 5)
    with pytest.raises(RuntimeError, match="must be at least one"):
        F.unfold(x, 5)  # as on CPU
    with pytest.raises(RuntimeError, match="match the calculated number of sliding blocks"):
        F.fold(torch.randn(1, 8, 5).to(DEV), (4, 4), 2)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(torch.randn(1, 7, 9).to(DEV), (4, 4), 2)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        torch.ops.aten.im2col(x.to(DEV), [0, 2], [1, 1], [0, 0], [1, 1])
    c = torch.randn(2, 8, 9)
    res = torch.ops.aten.col2im.out(
        c.to(DEV), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1], out=torch.empty(0, device=DEV)
    )
    torch.testing.assert_close(
        res.cpu(), torch.ops.aten.col2im(c, [4, 4], [2, 2], [1, 1], [0, 0], [1, 1])
    )
    res = torch.ops.aten.im2col.out(
        x.to(DEV), [2, 2], [1, 1], [0, 0], [1, 1], out=torch.empty(0, device=DEV)
    )
    torch.testing.assert_close(res.cpu(), torch.ops.aten.im2col(x, [2, 2], [1, 1], [0, 0], [1, 1]))


def test_adaptive_avg_pool2d_out_variant():
    x = torch.randn(2, 3, 7, 5)
    res = torch.ops.aten.adaptive_avg_pool2d.out(x.to(DEV), [3, 2], out=torch.empty(0, device=DEV))
    torch.testing.assert_close(
        res.cpu(), torch.ops.aten.adaptive_avg_pool2d.out(x, [3, 2], out=torch.empty(0))
    )


def test_resnet_head_and_unet_block_train_like_cpu():
    """A small net with reflection padding, bilinear upsampling and an adaptive
    pooling head: three SGD steps on the device track the CPU's."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.ReflectionPad2d(1),
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.ReLU(),
        torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
        torch.nn.ReplicationPad2d((1, 0, 0, 1)),
        torch.nn.Conv2d(4, 4, 2),
        torch.nn.AdaptiveMaxPool2d((3, 3)),
        torch.nn.AdaptiveAvgPool2d((2, 2)),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 5),
    )
    x, y = torch.randn(2, 3, 6, 6), torch.tensor([0, 4])
    train_matches_cpu(net, x, y)


# -- 3-d variants (the same kernels on (D, H, W) planes) --------------------------

CL3 = torch.channels_last_3d


@pytest.mark.parametrize("size", [(1, 1, 1), (2, 3, 4), (5, 7, 3), (4, 2, 9)])  # input 4 x 5 x 6
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_pool3d(size, dtype):
    x = rand((2, 3, 4, 5, 6), dtype)
    grads(lambda t: torch._adaptive_avg_pool3d(t, size), x, dtype=dtype, reduce=120)
    grads(lambda t: F.adaptive_avg_pool3d(t, size), x, dtype=dtype, reduce=120)
    grads(lambda t: F.adaptive_max_pool3d(t, size), x, dtype=dtype)
    _, i = F.adaptive_max_pool3d(x.to(DEV), size, return_indices=True)
    assert torch.equal(i.cpu(), F.adaptive_max_pool3d(x, size, return_indices=True)[1])


def test_adaptive_pool3d_layouts_batch1_and_errors():
    f = lambda t: t.contiguous(memory_format=CL3)  # noqa: E731
    grads(
        lambda t: torch._adaptive_avg_pool3d(f(t), (3, 2, 4)), rand((1, 3, 4, 5, 6), F32), reduce=8
    )
    grads(
        lambda t: F.adaptive_max_pool3d(t.transpose(-1, -3), (3, 2, 4)), rand((1, 3, 4, 5, 6), F32)
    )
    grads(
        lambda t: F.adaptive_avg_pool3d(t, (5, 2, 7)), rand((3, 4, 5, 6), F32), reduce=8
    )  # no batch
    out = torch._adaptive_avg_pool3d(f(rand((2, 3, 4, 4, 4), F32).to(DEV)), (2, 2, 2))
    assert out.is_contiguous(memory_format=CL3)
    with pytest.raises(RuntimeError, match="Expected 4D or 5D tensor"):
        torch._adaptive_avg_pool3d(torch.randn(4, 4, 4).to(DEV), (2, 2, 2))
    res = torch.ops.aten.adaptive_avg_pool3d.out(
        torch.randn(2, 2, 4, 5, 6).to(DEV), [3, 2, 4], out=torch.empty(0, device=DEV)
    )
    assert res.shape == (2, 2, 3, 2, 4)


SIZES_3D = {
    "size_mixed": dict(size=(7, 3, 9)),
    "scale_up": dict(scale_factor=2.0),
    "scale_mixed": dict(scale_factor=(0.5, 1.5, 2.5)),
    "scale_kept": dict(scale_factor=(1.7, 0.6, 2.3), recompute_scale_factor=False),
}


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


PADS_3D = {"all": (1, 2, 2, 1, 1, 2), "depth": (0, 0, 0, 0, 2, 1), "zero": (0,) * 6}
PADS_3D_REPLICATE = {**PADS_3D, "big": (6, 0, 0, 5, 4, 0), "negative": (-1, 2, 1, -2, 0, 1)}


@pytest.mark.parametrize(
    "mode,case", [("reflect", c) for c in PADS_3D] + [("replicate", c) for c in PADS_3D_REPLICATE]
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_3d(mode, case, dtype):
    p = PADS_3D_REPLICATE[case]
    grads(lambda t: F.pad(t, p, mode=mode), rand((2, 2, 3, 4, 5), dtype), dtype=dtype, reduce=16)
    grads(lambda t: F.pad(t, p, mode=mode), rand((2, 3, 4, 5), dtype), dtype=dtype, reduce=16)


def test_pad_3d_layouts_errors_and_out():
    for mode in ("reflect", "replicate"):
        grads(
            lambda t: F.pad(t.contiguous(memory_format=CL3), (1, 1, 2, 0, 1, 2), mode=mode),
            rand((1, 3, 3, 4, 5), F32),
            reduce=8,
        )
    x = torch.randn(1, 2, 3, 4, 5)
    for t in (x, x.to(DEV)):
        with pytest.raises(
            RuntimeError, match="Padding size should be less than the corresponding"
        ):
            F.pad(t, (0, 0, 0, 0, 3, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten.replication_pad3d_backward(
            torch.randn(1, 2, 3, 4, 5).to(DEV), x.to(DEV), [1, 1, 0, 0, 0, 0]
        )
    g = torch.randn(1, 2, 4, 6, 7)
    res = torch.ops.aten.replication_pad3d_backward.grad_input(
        g.to(DEV), x.to(DEV), [1, 1, 1, 1, 1, 0], grad_input=torch.empty(0, device=DEV)
    )
    torch.testing.assert_close(
        res.cpu(), torch.ops.aten.replication_pad3d_backward(g, x, [1, 1, 1, 1, 1, 0])
    )


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


@pytest.mark.parametrize("name", list(F64_OPS))
def test_float64_to_float64_precision(name):
    """float64 computes in float64 (sums, weights and source positions)."""
    grads(F64_OPS[name], rand((2, 3, 5, 4), torch.float64), dtype=torch.float64, reduce=4)


def test_fold_integer_dtypes_refused_like_pytorch():
    c = torch.ones(2, 8, 9, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.fold(c, (4, 4), 2)  # as on CPU
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.fold(c.to(DEV), (4, 4), 2)
    b = torch.rand(2, 8, 9) > 0.5
    assert torch.equal(F.fold(b.to(DEV), (4, 4), 2).cpu(), F.fold(b, (4, 4), 2))


# -- grid sampling, 3-d (grid_sampler_3d; ops/resample/grid_sample_3d.py; the 2-d one is grid_sample_2d.py) -------------


@pytest.mark.parametrize(
    "mode,padding",
    [(m, p) for m in ("bilinear", "nearest") for p in ("zeros", "border", "reflection")],
)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_grid_sample_3d(mode, padding, align, dtype):
    x = rand((2, 2, 3, 4, 5), dtype)
    grid = rand((2, 3, 2, 4, 3), dtype, -1.3, 1.3)
    fn = lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=padding, align_corners=align)  # noqa: E731
    grads(fn, x, grid, dtype=dtype, reduce=64 if dtype != F32 else 16)


def test_grid_sample_3d_layouts_and_errors():
    grads(
        lambda t, g: F.grid_sample(
            t.contiguous(memory_format=CL3), g.transpose(1, 3), align_corners=True
        ),
        rand((1, 3, 3, 4, 5), F32),
        rand((1, 4, 2, 3, 3), F32, -1.2, 1.2),
        reduce=16,
    )
    grads(
        lambda t, g: F.grid_sample(t, g, mode="nearest"),
        rand((2, 3, 3, 4, 5), F32),
        rand((2, 3, 2, 4, 3), F32),
        const=(0,),
    )
    for dev in ("cpu", DEV):
        with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
            torch.grid_sampler_3d(
                torch.randn(1, 2, 3, 4, 5).to(dev), torch.rand(1, 2, 2, 2, 3).to(dev), 2, 0, False
            )
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
        torch.grid_sampler_3d(
            torch.randn(1, 2, 3, 4, 5).to(DEV), torch.rand(1, 2, 2, 2, 2).to(DEV), 0, 0, False
        )


# -- antialiased interpolation (_upsample_{bilinear,bicubic}2d_aa) -------------------

AA_SIZES = {
    "down": dict(size=(3, 4)),
    "mixed": dict(size=(2, 9)),
    "up": dict(size=(11, 13)),
    "one": dict(size=(1, 1)),
    "scale": dict(scale_factor=0.35),
    "scale_kept": dict(scale_factor=(0.3, 1.7), recompute_scale_factor=False),
}


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
