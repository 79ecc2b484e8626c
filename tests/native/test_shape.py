"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the shape
family (eye, linspace, arange, tril/triu indices, roll, repeat_interleave,
full/zeros/ones)."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, check, grads, rand, same


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def test_roll_forward_backward():
    x = rand((3, 4, 5), F32)
    grads(lambda t: torch.roll(t, (2, -1), (0, 2)), x)
    grads(lambda t: torch.roll(t, 7), x)
    grads(lambda t: torch.roll(t.transpose(0, 2), 1, 1), x)


@pytest.mark.parametrize(
    "row,col,offset", [(4, 4, 0), (3, 5, 1), (5, 3, -2), (0, 3, 0), (4, 6, -10)]
)
def test_tri_indices(row, col, offset):
    for fn in (torch.triu_indices, torch.tril_indices):
        same(fn(row, col, offset, device=DEV), fn(row, col, offset))
    assert torch.triu_indices(3, 3, dtype=torch.int32, device=DEV).dtype == torch.int32


@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (3, 5), (6, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_eye(n, m, dtype):
    assert torch.equal(torch.eye(n, m, dtype=dtype, device=DEV).cpu(), torch.eye(n, m, dtype=dtype))
    assert torch.equal(torch.eye(n, dtype=dtype, device=DEV).cpu(), torch.eye(n, dtype=dtype))
    out = torch.empty(1, dtype=dtype, device=DEV)  # resized by the C++ body
    torch.eye(n, m, out=out)
    assert out.shape == (n, m) and torch.equal(out.cpu(), torch.eye(n, m, dtype=dtype))


@pytest.mark.parametrize("start,end,steps", [(0, 1, 7), (-3.5, 2.25, 1), (5, -5, 11), (0, 1, 0)])
def test_linspace_and_out_resizing(start, end, steps):
    torch.testing.assert_close(
        torch.linspace(start, end, steps, device=DEV).cpu(), torch.linspace(start, end, steps)
    )
    out = torch.empty(2, device=DEV)
    torch.linspace(start, end, steps, out=out)
    torch.testing.assert_close(out.cpu(), torch.linspace(start, end, steps))
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.linspace(0, 1, -1, device=DEV)


def test_arange_bad_ranges_are_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0, device=DEV)
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(0, 5, -1, device=DEV)
    assert torch.equal(torch.arange(10, 0, -3, device=DEV).cpu(), torch.arange(10, 0, -3))


def dev(x):
    return x.to(DEV)


def test_repeat_interleave_with_tensor_repeats():
    r = torch.tensor([2, 0, 3, 1])
    same(torch.repeat_interleave(dev(r)), torch.repeat_interleave(r))
    x = torch.randn(4, 3)
    same(torch.repeat_interleave(dev(x), dev(r), dim=0), torch.repeat_interleave(x, r, dim=0))
    with pytest.raises(RuntimeError, match="negative"):
        torch.repeat_interleave(dev(torch.tensor([1, -1])))


def test_building_ops():
    for dtype in (F32, F16, torch.int64, torch.int32):
        check(lambda d: torch.arange(3, 20, 2, dtype=dtype, device=d), "cpu")
        check(lambda d: torch.full((3, 4), 7, dtype=dtype, device=d), "cpu")
        check(lambda d: torch.zeros((2, 3), dtype=dtype, device=d), "cpu")
        check(lambda d: torch.ones((0, 3), dtype=dtype, device=d), "cpu")
    check(lambda d: torch.arange(-1.0, 1.0, 0.25, device=d), "cpu")
    out = torch.empty(0, device=DEV)
    torch.arange(0, 10, 3, out=out)
    assert torch.equal(out.cpu(), torch.arange(0.0, 10, 3))
    x = rand((4, 6), F32).to(DEV)
    x[:, ::2].fill_(2.5)
    x[1].zero_()
    assert (x.cpu()[:, ::2][[0, 2, 3]] == 2.5).all() and (x.cpu()[1] == 0).all()
    b = torch.empty(5, dtype=torch.bool, device=DEV).fill_(True)
    assert b.cpu().all()
    check(lambda t: F.one_hot(t, 6), torch.tensor([0, 5, 2, 2]))
    check(F.embedding, torch.tensor([[0, 3], [2, 2]]), rand((4, 3), F32))
    for dt in (F16, BF16, torch.int32, torch.int64, torch.bool, torch.float64, torch.uint8):
        check(lambda t: t.to(dt), rand((5, 3), F32, -5, 5))
        check(lambda t: t.t().to(dt), rand((5, 3), F32, -5, 5))
        check(lambda t: t.to(F32), rand((5, 3), dt if dt != torch.uint8 else torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_cat_launches_once_per_four_inputs(dtype):
    # torch's CUDA cat copies a batch of inputs per launch; so does ours (4 per launch),
    # reading strided inputs in place, any dim, into a strided result
    from torch_ext.ops import _launch

    g = torch.Generator().manual_seed(0)

    def make(*shape):
        return (torch.randn(*shape, generator=g) * 5).to(dtype)

    x = make(4, 6).to(DEV)
    torch.cat([x, x], 1)  # first use out of the count
    for dim in range(3):
        xs = [
            make(*[k if i == dim else n for i, n in enumerate((3, 4, 5))]) for k in (1, 3, 2, 4, 5)
        ]
        ds = [t.to(DEV) for t in xs]
        ds[1] = ds[1].transpose(0, 2).contiguous().transpose(0, 2)  # strided on the device
        before = _launch.launches()
        got = torch.cat(ds, dim)
        assert _launch.launches() - before == 2  # inputs 1-4, then input 5
        assert torch.equal(got.cpu(), torch.cat(xs, dim))
    out = torch.empty(10, 3, dtype=dtype, device=DEV).t()  # a strided result
    a, b = make(3, 4), make(3, 6)
    torch.cat([a.to(DEV), b.to(DEV)], 1, out=out)
    assert torch.equal(out.cpu(), torch.cat([a, b], 1))
    c = make(2)
    mixed = torch.cat([torch.arange(3).to(DEV), c.to(DEV)])  # promoted
    assert torch.equal(mixed.cpu(), torch.cat([torch.arange(3), c]))


@pytest.mark.parametrize("size,step", [(3, 2), (2, 2), (4, 1), (1, 3)])
def test_unfold_backward(size, step):
    x = rand((2, 9, 3), F32)
    grads(lambda t: t.unfold(1, size, step), x)
    grads(lambda t: t.unfold(-1, 2, 1), x)
    grads(lambda t: t.unfold(0, 1, 1), rand((), F32).reshape(()))
