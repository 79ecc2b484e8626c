"""Issue 17 item 6 ops through the dispatcher on privateuseone (fallback = error) against
the CPU: index_reduce, segment_reduce, histogram/histogramdd, multilabel_margin_loss,
max_unpool3d, fractional max pooling with given samples, lu_unpack / linalg.lu,
linalg.ldl_factor / ldl_solve and matrix_exp, with gradients where PyTorch has them,
and the errors PyTorch raises."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401

from helpers import DEV, assert_close, grads


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_values_and_gradient(reduce, include_self):
    torch.manual_seed(0)
    x = torch.randn(5, 4, 3)
    src = torch.randn(5, 6, 3)
    idx = torch.tensor([0, 3, 0, 1, 3, 3])
    fn = lambda a, b: a.index_reduce(1, idx.to(a.device), b, reduce, include_self=include_self)  # noqa: E731
    grads(fn, x, src)
    ints = torch.randint(-5, 6, (4, 3)), torch.randint(-5, 6, (6, 3))
    res = ints[0].to(DEV).index_reduce_(0, idx.to(DEV), ints[1].to(DEV), reduce, include_self=include_self)  # fmt: skip
    assert_close(res, ints[0].index_reduce_(0, idx, ints[1], reduce, include_self=include_self))


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_gradient_lengths_and_offsets(reduce):
    torch.manual_seed(1)
    x = torch.rand(8, 3) + 0.5
    lengths = torch.tensor([2, 0, 5, 1])
    offsets = torch.tensor([0, 2, 2, 7, 8])
    grads(lambda t: torch.segment_reduce(t, reduce, lengths=lengths.to(t.device)), x, reduce=5)
    grads(lambda t: torch.segment_reduce(t, reduce, offsets=offsets.to(t.device), initial=1.5), x, reduce=5)  # fmt: skip
    with pytest.raises(RuntimeError, match="sum to"):
        torch.segment_reduce(x.to(DEV), reduce, lengths=torch.tensor([1, 2], device=DEV))


def test_histogram_and_histogramdd():
    torch.manual_seed(2)
    x = torch.randn(300)
    w = torch.rand(300)
    for kw in (dict(bins=10), dict(bins=6, range=(-1.0, 2.0), weight=w, density=True)):
        res = torch.histogram(x.to(DEV), **{k: v.to(DEV) if torch.is_tensor(v) else v for k, v in kw.items()})  # fmt: skip
        ref = torch.histogram(x, **kw)
        assert_close(res.hist, ref.hist, reduce=30)
        assert_close(res.bin_edges, ref.bin_edges)
    edges = torch.tensor([-3.0, -1.0, 0.0, 0.5, 4.0])
    res = torch.histogram(x.to(DEV), edges.to(DEV), weight=w.to(DEV))
    assert_close(res.hist, torch.histogram(x, edges, weight=w).hist, reduce=30)
    out_h, out_e = torch.empty(0, device=DEV), torch.empty(0, device=DEV)
    torch.histogram(x.to(DEV), 4, out=(out_h, out_e))
    assert_close(out_h, torch.histogram(x, 4).hist)
    pts = torch.randn(100, 2)
    res = torch.histogramdd(pts.to(DEV), [3, 5], density=True)
    ref = torch.histogramdd(pts, [3, 5], density=True)
    assert_close(res.hist, ref.hist)
    for a, b in zip(res.bin_edges, ref.bin_edges):
        assert_close(a, b)
    with pytest.raises(RuntimeError, match="not finite"):
        torch.histogram(torch.tensor([0.0, float("inf")], device=DEV), 3)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.histogram(x.to(DEV), edges.double().to(DEV))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss_and_gradient(reduction):
    torch.manual_seed(3)
    x = torch.randn(3, 5)
    t = torch.tensor([[1, 4, -1, 0, 0], [0, 1, 2, 3, 4], [2, -1, 1, 1, 1]])
    grads(lambda a: F.multilabel_margin_loss(a, t.to(a.device), reduction=reduction), x)
    grads(lambda a: F.multilabel_margin_loss(a, t[0].to(a.device), reduction=reduction), x[0])


def test_max_unpool3d_and_gradient():
    torch.manual_seed(4)
    x = torch.randn(2, 3, 4, 6, 4)
    out, idx = F.max_pool3d(x, 2, return_indices=True)
    grads(lambda v: F.max_unpool3d(v, idx.to(v.device), 2, output_size=x.shape[-3:]), out)
    res = F.max_unpool3d(out[0].to(DEV), idx[0].to(DEV), 2)  # unbatched
    assert_close(res, F.max_unpool3d(out[0], idx[0], 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool_with_samples_and_gradient(dtype):
    torch.manual_seed(5)
    x = torch.randn(2, 3, 10, 9, dtype=dtype)
    u = torch.rand(2, 3, 2, dtype=dtype)
    fn2 = lambda v, s: F.fractional_max_pool2d(v, (3, 2), output_size=(4, 5), _random_samples=s)  # noqa: E731
    grads(fn2, x, u, dtype=dtype, const=(1,))
    res, idx = F.fractional_max_pool2d(x.to(DEV), 2, output_ratio=(0.5, 0.5), return_indices=True,
                                       _random_samples=u.to(DEV))  # fmt: skip
    ref, ref_idx = F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5), return_indices=True, _random_samples=u)  # fmt: skip
    assert_close(res, ref)
    assert_close(idx, ref_idx)
    x3 = torch.randn(1, 2, 6, 7, 5, dtype=dtype)
    u3 = torch.rand(1, 2, 3, dtype=dtype)
    fn3 = lambda v, s: F.fractional_max_pool3d(v, 2, output_size=(3, 4, 2), _random_samples=s)  # noqa: E731
    grads(fn3, x3, u3, dtype=dtype, const=(1,))
    # without samples: drawn on the device, windows still inside the input
    out = F.fractional_max_pool2d(x.to(DEV), 3, output_size=(5, 4))
    assert out.shape == (2, 3, 5, 4) and out.device.type == DEV


@pytest.mark.parametrize("shape", [(4, 4), (6, 4), (3, 5), (2, 5, 3)])
def test_lu_unpack_and_linalg_lu_with_gradients(shape):
    torch.manual_seed(6)
    A = torch.randn(shape, dtype=torch.float64)
    LU, piv = torch.linalg.lu_factor(A)
    res = torch.lu_unpack(LU.to(DEV), piv.to(DEV))
    for r, e in zip(res, torch.lu_unpack(LU, piv)):
        assert_close(r, e)
    P, L, U = torch.lu_unpack(LU.to(DEV), piv.to(DEV), unpack_data=False)
    assert L.numel() == 0 and U.numel() == 0
    assert_close(P, torch.lu_unpack(LU, piv)[0])
    for r, e in zip(torch.linalg.lu(A.to(DEV)), torch.linalg.lu(A)):
        assert_close(r, e)
    grads(lambda a: torch.stack([t.sum() for t in torch.linalg.lu(a)[1:]]), A, dtype=torch.float64)


@pytest.mark.parametrize("n", [1, 5, 9])
def test_ldl_factor_solve_match_lapack(n):
    torch.manual_seed(7)
    A = torch.randn(3, n, n, dtype=torch.float64)
    A = A + A.mT
    A.diagonal(dim1=-2, dim2=-1).mul_(0.05)  # small diagonal: 2x2 blocks and row pivots
    LD, piv, info = torch.linalg.ldl_factor_ex(A.to(DEV))
    rLD, rpiv, rinfo = torch.linalg.ldl_factor_ex(A)
    assert torch.equal(piv.cpu(), rpiv) and torch.equal(info.cpu(), rinfo)
    assert_close(LD, rLD)
    B = torch.randn(3, n, 2, dtype=torch.float64)
    assert_close(torch.linalg.ldl_solve(LD, piv, B.to(DEV)), torch.linalg.ldl_solve(rLD, rpiv, B))
    S = torch.zeros(2, 2, dtype=torch.float32)
    assert torch.linalg.ldl_factor_ex(S.to(DEV)).info.item() == torch.linalg.ldl_factor_ex(S).info.item()  # fmt: skip


def test_matrix_exp_and_gradient():
    torch.manual_seed(8)
    A = torch.randn(2, 4, 4)
    for scale in (1e-3, 1.0, 6.0):
        assert_close(torch.matrix_exp((A * scale).to(DEV)), torch.matrix_exp((A * scale).double()), reduce=4 * scale)  # fmt: skip
    grads(torch.matrix_exp, A * 0.5, reduce=8)
    with pytest.raises(RuntimeError, match="square"):
        torch.matrix_exp(torch.randn(2, 3, device=DEV))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_and_gradient(reduction):
    torch.manual_seed(9)
    T, N, C = 10, 3, 5
    x = torch.randn(T, N, C, dtype=torch.float64)
    tg = torch.tensor([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 4]])
    il, tlen = [10, 8, 5], [3, 2, 4]  # the last cannot align (4 repeats need 7 steps)
    fn = lambda v: F.ctc_loss(v.log_softmax(-1), tg.to(v.device), il, tlen, reduction=reduction,  # noqa: E731
                              zero_infinity=True)  # fmt: skip
    grads(fn, x, dtype=torch.float64)
    # Tensor lengths (the generic overload), 1-d concatenated targets
    cat = torch.tensor([1, 2, 2, 3, 1, 4, 4, 4, 4])
    res = F.ctc_loss(x.log_softmax(-1).to(DEV), cat.to(DEV), torch.tensor(il, device=DEV),
                     torch.tensor(tlen, device=DEV), reduction="none")  # fmt: skip
    ref = F.ctc_loss(x.log_softmax(-1), cat, torch.tensor(il), torch.tensor(tlen), reduction="none")  # fmt: skip
    assert_close(res, ref)
