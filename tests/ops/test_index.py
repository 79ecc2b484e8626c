"""Indexing and tensor building kernels."""

import pytest
import torch

from torch_ext.ops import index as I
from torch_ext.ops import shape

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


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
        assert_close(I.index_select(x, dim, idx), x.cpu().index_select(dim, idx.cpu()))
    xt = x.transpose(0, 1)
    assert_close(I.index_select(xt, 1, (ii % 4).to(device)), xt.cpu().index_select(1, ii % 4))
    assert_close(
        I.index_select(x, 0, torch.empty(0, dtype=torch.int64, device=device)), x.cpu()[:0]
    )
    w = randn((10, 4), torch.float32, device)
    ids = torch.randint(0, 10, (3, 5)).to(device)
    assert_close(I.embedding(w, ids), torch.embedding(w.cpu(), ids.cpu()))
    g = randn((3, 5, 4), torch.float32, device)
    for pad in (-1, 2):
        ref = torch.ops.aten.embedding_dense_backward(g.cpu(), ids.cpu(), 10, pad, False)
        assert_close(I.embedding_dense_backward(g, ids, 10, pad, False), ref, atol=1e-5)
    gh = g.to(torch.bfloat16)
    ref = torch.ops.aten.embedding_dense_backward(to_ref(gh), ids.cpu(), 10, -1, False)
    assert_close(
        I.embedding_dense_backward(gh, ids, 10, -1, False), ref.to(torch.bfloat16), torch.bfloat16
    )


def test_masked_fill_cat_flip(device):
    x = randn((5, 6), torch.float32, device)
    m = (torch.randn(6) > 0).to(device)
    assert_close(I.masked_fill(x, m, -1.5), x.cpu().masked_fill(m.cpu(), -1.5))
    y = x.clone()
    I.masked_fill_(y, m, torch.tensor(3.0))
    assert_close(y, x.cpu().masked_fill(m.cpu(), 3.0))
    parts = [x, x[:, :2], randn((5, 0), torch.float32, device)]
    assert_close(shape.cat(parts, 1), torch.cat([p.cpu() for p in parts], 1))
    assert_close(shape.cat([x, x.t().contiguous().t()], 0), torch.cat([x.cpu(), x.cpu()], 0))
    assert_close(
        shape.cat([x.to(torch.float16), x.to(torch.int32)], 0),
        torch.cat([x.cpu().half(), x.cpu().int()], 0),
    )
    z = randn((3, 4, 5), torch.int32, device).transpose(0, 2)
    for dims in ([0], [1, 2], [0, 1, 2], [-1]):
        assert_close(shape.flip(z, dims), torch.flip(z.cpu(), dims))


@pytest.mark.parametrize("diagonal", [0, 1, -2, 10])
def test_tril_triu(diagonal, device):
    x = randn((2, 7, 5), torch.float32, device)
    out = torch.empty_like(x)
    shape.tril_out(x, diagonal, out)
    assert_close(out, torch.tril(x.cpu(), diagonal))
    shape.triu_out(x.transpose(1, 2), diagonal, out.transpose(1, 2))
    assert_close(out.transpose(1, 2), torch.triu(x.cpu().transpose(1, 2), diagonal))


def test_arange(device):
    for start, end, step, dtype in [
        (0, 10, 1, torch.int64),
        (1.5, 5, 0.5, torch.float32),
        (10, -3, -3, torch.int32),
        (0, 1, 0.1, torch.float64),
    ]:
        ref = torch.arange(start, end, step, dtype=dtype)
        out = torch.empty(ref.shape, dtype=dtype, device=device)
        shape.arange_out(start, end, step, out)
        assert_close(out, ref, atol=1e-6 if dtype == torch.float64 else None)


# -- data-dependent indexing -------------------------------------------------

from torch_ext.ops import advanced_index as A  # noqa: E402


def test_nonzero_masked_select(device):
    x = randn((4, 5, 6), torch.float32, "cpu")
    xd, md = x.to(device), (x > 0.5).to(device)
    assert_close(A.nonzero(md), torch.nonzero(x > 0.5))
    assert_close(A.nonzero(xd[0, 0]), torch.nonzero(x[0, 0]))
    assert_close(A.masked_select(xd, (x[0] > 0).to(device)), x[(x[0] > 0).expand(4, 5, 6)])
    assert A.nonzero(torch.zeros(3, 0).to(device)).shape == (0, 2)


INDEX_CASES = [
    lambda i, j, m: [i],
    lambda i, j, m: [None, j],
    lambda i, j, m: [i, j],
    lambda i, j, m: [i, None, j],
    lambda i, j, m: [None, i.view(3, 1), j.view(1, 3)],
    lambda i, j, m: [m],
    lambda i, j, m: [None, None, None, i % 2],
]


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


def test_repeat_randperm_multinomial(device):
    x = randn((2, 3), torch.float32, device)
    for reps in ([2, 3], [1, 2, 1], [2, 0]):
        assert_close(A.repeat(x, reps), x.cpu().repeat(*reps))
    out = torch.empty(50, dtype=torch.int64, device=device)
    A.randperm_out(50, None, out)
    assert sorted(out.cpu().tolist()) == list(range(50))
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1, 1, 1, 1.0]])
    s = A.multinomial(p.to(device), 4000, True).cpu()
    freq = torch.stack([(s[0] == k).float().mean() for k in range(4)])
    assert (freq - p[0]).abs().max() < 0.03
    s = A.multinomial(p.to(device), 3, False).cpu()
    assert sorted(s[0].tolist()) == [0, 2, 3] and len(set(s[1].tolist())) == 3


def test_index_add_linspace_eye(device):
    from torch_ext.ops import index as I2

    x = randn((4, 6, 3), torch.float32, device)
    src = randn((4, 5, 3), torch.float32, device)
    idx = torch.tensor([0, 5, 5, 2, 1])
    out = torch.empty_like(x)
    I2.index_add_out(x, 1, idx.to(device), src, 0.5, out)
    assert_close(out, x.cpu().index_add(1, idx, src.cpu(), alpha=0.5), atol=1e-5)
    with pytest.raises(IndexError, match="index -1 is out of bounds"):  # as on CPU: no wrapping
        I2.index_add_out(x, 1, torch.tensor([0, 5, 5, 2, -1]).to(device), src, 0.5, out)
        if out.device.type == "privateuseone":  # the cuda driver reports at the next sync
            torch.privateuseone.synchronize()
    for start, end, steps, dtype in [
        (0, 1, 11, torch.float32),
        (-3, 7, 1, torch.float64),
        (2, -2, 7, torch.float64),
        (0, 10, 6, torch.int64),
    ]:
        ref = torch.linspace(start, end, steps, dtype=dtype)
        out = torch.empty(ref.shape, dtype=dtype, device=device)
        shape.linspace_out(start, end, steps, out)
        assert_close(out, ref, atol=1e-6 if dtype.is_floating_point else None)
    out = torch.empty(3, 5, device=device)
    shape.eye_out(3, 5, out)
    assert_close(out, torch.eye(3, 5))


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
