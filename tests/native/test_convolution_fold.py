"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
convolution family: unfold/fold (im2col/col2im)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, grads, rand


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


DTYPES = [F32, F16, BF16]


CL = torch.channels_last


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


def test_fold_integer_dtypes_refused_like_pytorch():
    c = torch.ones(2, 8, 9, dtype=torch.int64)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.fold(c, (4, 4), 2)  # as on CPU
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.fold(c.to(DEV), (4, 4), 2)
    b = torch.rand(2, 8, 9) > 0.5
    assert torch.equal(F.fold(b.to(DEV), (4, 4), 2).cpu(), F.fold(b, (4, 4), 2))
