"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the indexing
family (gather/scatter, index_select/embedding, index/index_put,
nonzero/masked_select, scatter_reduce)."""

import pytest

import torch

from torch_ext.ops import advanced_index as A
from torch_ext.ops import index as I
from torch_ext.ops import index_select as IS

from helpers import assert_kernel_close as assert_close
from helpers import randn, to_ref


INDEX_CASES = [
    lambda i, j, m: [i],
    lambda i, j, m: [None, j],
    lambda i, j, m: [i, j],
    lambda i, j, m: [i, None, j],
    lambda i, j, m: [None, i.view(3, 1), j.view(1, 3)],
    lambda i, j, m: [m],
    lambda i, j, m: [None, None, None, i % 2],
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_scatter(dim, dtype, device):
    x = randn((4, 5, 6), dtype, device)
    shape = [4, 5, 6]
    shape[dim] = 3
    idx = torch.randint(0, x.shape[dim], shape).to(device)
    out = torch.empty(shape, dtype=dtype, device=device)
    I.gather_out(x, dim, idx, False, out)
    assert_close(out, torch.gather(x.cpu(), dim, idx.cpu()))
    src = randn(shape, dtype, device)
    o = torch.empty_like(x)
    uniq = torch.argsort(torch.rand(4, 5, 6), dim).narrow(dim, 0, 3).to(device)
    I.scatter_src_out(x, dim, uniq, src, o)
    assert_close(o, x.cpu().scatter(dim, uniq.cpu(), src.cpu()))
    I.scatter_value_out(x, dim, uniq, 2, o)
    assert_close(o, x.cpu().scatter(dim, uniq.cpu(), 2))
    if dtype != torch.bfloat16:
        I.scatter_add_out(x, dim, idx, src, o)
        assert_close(
            o,
            x.cpu().scatter_add(dim, idx.cpu(), src.cpu()),
            atol=1e-5 if dtype.is_floating_point else None,
        )


def test_scatter_reduce_and_inplace(device):
    x = randn((3, 8), torch.float32, device, 0.5, 1.5)
    idx = torch.randint(0, 8, (3, 5)).to(device)
    src = randn((3, 5), torch.float32, device, 0.5, 1.5)
    o = torch.empty_like(x)
    I.scatter_reduce_out(x, 1, idx, src, "multiply", o)
    assert_close(o, x.cpu().scatter(1, idx.cpu(), src.cpu(), reduce="multiply"))
    I.scatter_reduce_out(x, 1, idx, src, "add", o)
    assert_close(o, x.cpu().scatter(1, idx.cpu(), src.cpu(), reduce="add"))
    ref = x.cpu().scatter_add(1, idx.cpu(), src.cpu())
    I.scatter_add_out(x, 1, idx, src, x)  # in place: out is self
    assert_close(x, ref)


def test_index_select_embedding(device):
    x = randn((4, 9, 3), torch.float32, device)
    ii = torch.tensor([8, 0, 2, 2, -1])
    for dim in (0, 1, 2):
        idx = (ii % x.shape[dim]).to(device)
        assert_close(IS.index_select(x, dim, idx), x.cpu().index_select(dim, idx.cpu()))
    xt = x.transpose(0, 1)
    assert_close(IS.index_select(xt, 1, (ii % 4).to(device)), xt.cpu().index_select(1, ii % 4))
    assert_close(
        IS.index_select(x, 0, torch.empty(0, dtype=torch.int64, device=device)), x.cpu()[:0]
    )
    w = randn((10, 4), torch.float32, device)
    ids = torch.randint(0, 10, (3, 5)).to(device)
    assert_close(IS.embedding(w, ids), torch.embedding(w.cpu(), ids.cpu()))
    g = randn((3, 5, 4), torch.float32, device)
    for pad in (-1, 2):
        ref = torch.ops.aten.embedding_dense_backward(g.cpu(), ids.cpu(), 10, pad, False)
        assert_close(IS.embedding_dense_backward(g, ids, 10, pad, False), ref, atol=1e-5)
    gh = g.to(torch.bfloat16)
    ref = torch.ops.aten.embedding_dense_backward(to_ref(gh), ids.cpu(), 10, -1, False)
    assert_close(
        IS.embedding_dense_backward(gh, ids, 10, -1, False), ref.to(torch.bfloat16), torch.bfloat16
    )


def test_nonzero_masked_select(device):
    x = randn((4, 5, 6), torch.float32, "cpu")
    xd, md = x.to(device), (x > 0.5).to(device)
    assert_close(A.nonzero(md), torch.nonzero(x > 0.5))
    assert_close(A.nonzero(xd[0, 0]), torch.nonzero(x[0, 0]))
    assert_close(A.masked_select(xd, (x[0] > 0).to(device)), x[(x[0] > 0).expand(4, 5, 6)])
    assert A.nonzero(torch.zeros(3, 0).to(device)).shape == (0, 2)


@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_index_and_index_put(case, device):
    x = randn((4, 5, 6, 2, 3), torch.float32, "cpu")
    i, j = torch.tensor([0, 3, -1]), torch.tensor([1, 1, 4])
    idx = INDEX_CASES[case](i, j, x[:, 0, 0, 0, 0] > 0)
    key = tuple(slice(None) if t is None else t for t in idx)
    didx = [None if t is None else t.to(device) for t in idx]
    ref = x[key]
    assert_close(A.index(x.to(device), didx), ref)
    v = torch.randn(ref.shape)
    expect = x.clone()
    expect[key] = v
    got = x.to(device)
    A.index_put_(got, didx, v.to(device), False)
    # With duplicate index tuples a plain put may keep either value.
    tensors = [t for t in idx if t is not None]
    if tensors[0].dtype != torch.bool:
        tuples = torch.stack(
            [
                t % n
                for t, n in zip(
                    torch.broadcast_tensors(*tensors),
                    [x.shape[d] for d, t in enumerate(idx) if t is not None],
                )
            ],
            -1,
        ).reshape(-1, len(tensors))
        unique = torch.unique(tuples, dim=0).shape[0] == tuples.shape[0]
    else:
        unique = True
    if unique:
        assert_close(got, expect)
    if all(t is not None for t in idx):
        expect = x.clone().index_put_(key, v, accumulate=True)
        got = x.to(device)
        A.index_put_(got, didx, v.to(device), True)
        assert_close(got, expect, atol=1e-5)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_scatter_reduce_two(reduce, include_self, dtype, device):
    x = randn((3, 8), dtype, device, 1, 5)
    idx = torch.randint(0, 8, (3, 6))
    src = randn((3, 6), dtype, device, 1, 5)
    out = torch.empty_like(x)
    I.scatter_reduce_two_out(x, 1, idx.to(device), src, reduce, include_self, out)
    ref = x.cpu().scatter_reduce(1, idx, src.cpu(), reduce, include_self=include_self)
    assert_close(
        out,
        ref,
        rtol=1e-5 if dtype.is_floating_point else None,
        atol=1e-5 if dtype.is_floating_point else None,
    )


@pytest.mark.parametrize("forced", [None, False], ids=["driver", "sorted"])
def test_embedding_backward_is_reproducible(forced, device, monkeypatch):
    """embedding's backward sums each weight row in a fixed order (as CUDA's) where the
    driver's float atomics would add in any order (spec atomics_in_order: the
    interpreter's are in order): repeated runs with many repeated indices agree bit for
    bit, and equal the float64 sums."""
    from helpers import force_spec, spy_launches
    from torch_ext.backends import spec

    in_order = bool(spec("atomics_in_order")) if forced is None else forced
    force_spec(monkeypatch, IS, atomics_in_order=in_order)
    calls = spy_launches(monkeypatch, IS)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 10, (300,), generator=g)  # every row about 30 times
    go = torch.randn(300, 16, generator=g)
    ref = torch.zeros(10, 16, dtype=torch.float64).index_add_(0, ids, go.double())
    runs = [
        IS.embedding_dense_backward(go.to(device), ids.to(device), 10, -1, False).cpu()
        for _ in range(3)
    ]
    assert all(torch.equal(runs[0], r) for r in runs[1:])
    torch.testing.assert_close(runs[0].double(), ref, atol=1e-4, rtol=1e-5)
    assert any(k is IS._embedding_bwd_kernel for k, _ in calls) == in_order
