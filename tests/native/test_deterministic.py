"""Deterministic mode (torch.use_deterministic_algorithms(True)): the ops CUDA computes
deterministically there and our kernels otherwise sum with float atomics (index_add,
index_put_ with accumulate, scatter_add / scatter_reduce sum and mean, embedding's
backward) take torch_ext/ops/deterministic.py's fixed-order path: results as on the
CPU, the same bits on every run, bounds errors as usual."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401

from helpers import DEV


@pytest.fixture(autouse=True)
def deterministic():
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(prev)


def _g():
    return torch.Generator().manual_seed(0)


def _idx(n, hi):
    return torch.randint(0, hi, (n,), generator=_g())


# Each case: fn(x, v, i) with v(*shape) the values and i(index) the index, both on x's
# device.
CASES = {
    "index_add_dim0": lambda x, v, i: x.index_add(0, i(_idx(40, 5)), v(40, 3, 4), alpha=0.5),
    "index_add_dim1": lambda x, v, i: x.index_add(1, i(_idx(30, 3)), v(5, 30, 4)),
    "index_add_noncontig": lambda x, v, i: x.transpose(0, 2).index_add(
        2, i(_idx(7, 5)), v(4, 3, 7)
    ),
    "index_put_acc": lambda x, v, i: x.index_put((i(_idx(50, 5)), i(_idx(50, 3))), v(50, 4), True),
    "index_put_neg_none": lambda x, v, i: torch.ops.aten.index_put(
        x, [None, i(torch.tensor([-1, 0, -1, 2, -1]))], v(5, 5, 4), True
    ),
    "index_put_bool": lambda x, v, i: x.index_put((x[..., 0] > 0,), v(4), True),
    "scatter_add": lambda x, v, i: x.scatter_add(
        1, i(_idx(5 * 6 * 4, 3).view(5, 6, 4)), v(5, 7, 4)
    ),
    "scatter_sum": lambda x, v, i: x.scatter_reduce(
        0, i(_idx(120, 5).view(10, 3, 4)), v(10, 3, 4), "sum"
    ),
    "scatter_mean": lambda x, v, i: x.scatter_reduce(
        2, i(_idx(5 * 3 * 9, 4).view(5, 3, 9)), v(5, 3, 9), "mean", include_self=False
    ),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", CASES)
def test_fixed_order_sums_match_cpu(name, dtype):
    x = torch.randn(5, 3, 4, generator=_g()).to(dtype)

    def v(*shape):
        return torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(dtype)

    def on_dev(*shape):
        return v(*shape).to(DEV)

    fn = CASES[name]
    exp = fn(x.float(), lambda *s: v(*s).float(), lambda t: t)
    a = fn(x.to(DEV), on_dev, lambda t: t.to(DEV))
    b = fn(x.to(DEV), on_dev, lambda t: t.to(DEV))
    assert a.device.type == "privateuseone" and a.dtype == dtype
    assert torch.equal(a.cpu(), b.cpu())
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-3, atol=2e-3)
    torch.testing.assert_close(a.cpu().float(), exp, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_backward_fixed_order(padding_idx, dtype):
    w = torch.randn(10, 6, generator=_g()).to(dtype)
    ids = _idx(64, 10).view(8, 8)
    go = torch.randn(8, 8, 6, generator=_g()).to(dtype)
    # each row's sum rounded once into the weight's dtype (bf16: no float32 pass between)
    exp = torch.ops.aten.embedding_dense_backward(go.double(), ids, 10, padding_idx or -1, False)
    grads = []
    for _ in range(2):
        wd = w.to(DEV).requires_grad_()
        F.embedding(ids.to(DEV), wd, padding_idx=padding_idx).backward(go.to(DEV))
        grads.append(wd.grad.cpu())
    assert torch.equal(grads[0], grads[1]) and grads[0].dtype == dtype
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=4e-3, atol=1e-5)
    torch.testing.assert_close(grads[0].double(), exp, **tol)
    if padding_idx is not None:
        assert grads[0][padding_idx].abs().max() == 0


def test_bounds_errors_unchanged():
    # Each error is raised by the call or, on the cuda driver, at the next synchronize.
    sync = torch.privateuseone.synchronize
    x = torch.zeros(5, 3, device=DEV)
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_add(0, torch.tensor([0, 7], device=DEV), torch.ones(2, 3, device=DEV))
        sync()
    with pytest.raises(IndexError):
        x.index_put_((torch.tensor([9], device=DEV),), torch.ones(3, device=DEV), True)
        sync()
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.scatter_add(0, torch.tensor([[6, 0, 0]], device=DEV), torch.ones(1, 3, device=DEV))
        sync()
    sync()
