"""Entries whose bodies size their outputs in C++ (eye, linspace, arange) and
the later structured additions (cumprod, index_add, scatter_reduce.two,
norm.out), plus fill_.Tensor and native_dropout_backward, on the device."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV


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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_cumprod(dtype):
    x = (
        (torch.rand(4, 7, dtype=torch.float64) + 0.5).to(dtype)
        if dtype.is_floating_point
        else torch.randint(1, 3, (4, 7), dtype=dtype)
    )
    for dim in (0, 1, -1):
        torch.testing.assert_close(x.to(DEV).cumprod(dim).cpu(), x.cumprod(dim))
    y = x.to(DEV).t()
    y.cumprod_(0)
    torch.testing.assert_close(y.cpu(), x.t().cumprod(0))


def test_index_add_with_alpha_and_duplicates():
    base = torch.randn(6, 3)
    idx = torch.tensor([0, 5, 5, 2])
    src = torch.randn(4, 3)
    expected = base.index_add(0, idx, src, alpha=-1.5)
    torch.testing.assert_close(
        base.to(DEV).index_add(0, idx.to(DEV), src.to(DEV), alpha=-1.5).cpu(), expected
    )
    d = base.to(DEV)
    d.index_add_(0, idx.to(DEV), src.to(DEV), alpha=-1.5)
    torch.testing.assert_close(d.cpu(), expected)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_two(reduce, include_self):
    src = torch.rand(8) + 0.5
    idx = torch.tensor([0, 1, 0, 1, 2, 1, 4, 4])
    base = torch.rand(5) + 0.5
    expected = base.scatter_reduce(0, idx, src, reduce, include_self=include_self)
    actual = base.to(DEV).scatter_reduce(
        0, idx.to(DEV), src.to(DEV), reduce, include_self=include_self
    )
    torch.testing.assert_close(actual.cpu(), expected)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
def test_norm_out_overloads(p):
    x = torch.randn(4, 9)
    out = torch.empty(0, device=DEV)
    torch.ops.aten.norm.out(x.to(DEV), p, [1], False, out=out)
    torch.testing.assert_close(out.cpu(), torch.ops.aten.norm.ScalarOpt_dim(x, p, [1], False))
    out64 = torch.empty(0, dtype=torch.float64, device=DEV)
    torch.ops.aten.norm.dtype_out(x.to(DEV), p, [0], True, dtype=torch.float64, out=out64)
    torch.testing.assert_close(
        out64.cpu(), torch.ops.aten.norm.ScalarOpt_dim_dtype(x, p, [0], True, dtype=torch.float64)
    )


def test_fill_with_a_tensor_value():
    d = torch.empty(3, 4, device=DEV)
    d.fill_(torch.tensor(2.5))  # 0-dim CPU value
    assert torch.equal(d.cpu(), torch.full((3, 4), 2.5))
    d.fill_(torch.tensor(-1.0, device=DEV))
    assert torch.equal(d.cpu(), torch.full((3, 4), -1.0))


def test_dropout_backward_through_autograd():
    torch.manual_seed(0)
    x = torch.randn(200, device=DEV, requires_grad=True)
    y = torch.nn.functional.dropout(x, p=0.4, training=True)
    y.backward(torch.ones_like(y))
    kept = (y != 0).cpu()
    grad = x.grad.cpu()
    torch.testing.assert_close(grad[kept], torch.full_like(grad[kept], 1 / 0.6))
    assert torch.all(grad[~kept] == 0)
    assert 0.4 < kept.float().mean().item() < 0.8


def test_out_and_inplace_overloads_of_the_later_entries():
    x = torch.rand(4, 6) + 0.5
    out = torch.empty(0, device=DEV)
    torch.cumprod(x.to(DEV), 1, out=out)
    torch.testing.assert_close(out.cpu(), x.cumprod(1))
    e = torch.empty(0, device=DEV)
    torch.eye(4, out=e)
    assert torch.equal(e.cpu(), torch.eye(4))
    idx, src = torch.tensor([0, 3, 3]), torch.randn(3, 6)
    o = torch.empty(0, device=DEV)
    torch.index_add(x.to(DEV), 0, idx.to(DEV), src.to(DEV), out=o)
    torch.testing.assert_close(o.cpu(), x.index_add(0, idx, src))
    ix, s = torch.tensor([[0, 1, 0, 2, 1, 3]]).expand(4, 6), torch.rand(4, 6)
    o2 = torch.empty(0, device=DEV)
    torch.scatter_reduce(x.to(DEV), 1, ix.to(DEV), s.to(DEV), "amax", out=o2)
    torch.testing.assert_close(o2.cpu(), x.scatter_reduce(1, ix, s, "amax"))
    d = x.to(DEV)
    d.scatter_reduce_(1, ix.to(DEV), s.to(DEV), "sum", include_self=False)
    torch.testing.assert_close(d.cpu(), x.scatter_reduce(1, ix, s, "sum", include_self=False))
    r = (x - 1).to(DEV)
    torch.relu_(r)
    torch.testing.assert_close(r.cpu(), torch.relu(x - 1))
    v1, v2 = torch.randn(4), torch.randn(6)
    o3 = torch.empty(0, device=DEV)
    torch.addr(x.to(DEV), v1.to(DEV), v2.to(DEV), beta=0.5, alpha=2, out=o3)
    torch.testing.assert_close(o3.cpu(), torch.addr(x, v1, v2, beta=0.5, alpha=2))
    n = torch.ops.aten.norm.ScalarOpt_dim_dtype(x.to(DEV), 2.0, [1], False, dtype=torch.float64)
    torch.testing.assert_close(
        n.cpu(), torch.ops.aten.norm.ScalarOpt_dim_dtype(x, 2.0, [1], False, dtype=torch.float64)
    )
    c = torch.randn(3, 2).to(DEV)
    assert torch.equal(torch.view_as_complex(c).cpu(), torch.view_as_complex(c.cpu()))
