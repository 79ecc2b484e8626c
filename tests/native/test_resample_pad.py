"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
resample family: reflection and replication padding (1-d, 2-d, 3-d)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, grads, rand


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


PADS_2D = {
    "all": (1, 2, 3, 2),
    "wide": (4, 4, 0, 0),
    "tall": (0, 0, 4, 1),
    "one": (1, 1, 1, 1),
    "zero": (0, 0, 0, 0),
}


PADS_2D_REPLICATE = {**PADS_2D, "big": (7, 0, 2, 9), "negative": (-1, 2, 1, -2)}


CL3 = torch.channels_last_3d


PADS_3D = {"all": (1, 2, 2, 1, 1, 2), "depth": (0, 0, 0, 0, 2, 1), "zero": (0,) * 6}


PADS_3D_REPLICATE = {**PADS_3D, "big": (6, 0, 0, 5, 4, 0), "negative": (-1, 2, 1, -2, 0, 1)}


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
