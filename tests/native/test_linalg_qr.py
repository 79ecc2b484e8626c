"""torch.linalg.qr and torch.qr on the device (PyTorch's structured impl over our
Householder stubs, torch_ext/ops/linalg_qr.py) against CPU's LAPACK: every mode, tall,
wide, square, batched and empty matrices, a column already reduced, out=, gradients,
and the dtypes CUDA refuses refused."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV

SHAPES = [(5, 3), (3, 5), (4, 4), (2, 3, 6, 4), (1, 1), (0, 3, 3), (3, 0), (6, 1)]


def same(a, b, tol):
    assert a.device.type == "privateuseone"
    torch.testing.assert_close(a.cpu(), b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_qr_matches_lapack(shape, mode, dtype):
    g = torch.Generator().manual_seed(len(shape) * 7 + shape[-1])
    a = torch.randn(*shape, dtype=dtype, generator=g)
    q, r = torch.linalg.qr(a.to(DEV), mode=mode)
    rq, rr = torch.linalg.qr(a, mode=mode)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert q.shape == rq.shape and r.shape == rr.shape and r.dtype == dtype
    same(r, rr, tol)  # LAPACK's signs: R's diagonal as CPU's, not only up to sign
    if mode != "r":
        same(q, rq, tol)
        same(q @ r, a, tol * 10)


def test_rank_deficient_and_reduced_columns():
    a = torch.tensor(
        [[2.0, 4.0, 1.0], [0.0, 0.0, 3.0], [0.0, 0.0, 4.0], [0.0, 0.0, 0.0]], dtype=torch.float64
    )  # column 0 needs no reflection, column 1 is a multiple of it
    for mode in ("reduced", "complete"):
        q, r = torch.linalg.qr(a.to(DEV), mode=mode)
        rq, rr = torch.linalg.qr(a, mode=mode)
        same(q, rq, 1e-12)
        same(r, rr, 1e-12)


def test_torch_qr_and_out_variants():
    a = torch.randn(5, 3, dtype=torch.float64)
    for some in (True, False):
        q, r = torch.qr(a.to(DEV), some=some)
        rq, rr = torch.qr(a, some=some)
        same(q, rq, 1e-12)
        same(r, rr, 1e-12)
    q = torch.empty(0, device=DEV, dtype=torch.float64)
    r = torch.empty(0, device=DEV, dtype=torch.float64)
    torch.linalg.qr(a.to(DEV), out=(q, r))
    rq, rr = torch.linalg.qr(a)
    same(q, rq, 1e-12)
    same(r, rr, 1e-12)


def test_qr_gradients():
    torch.manual_seed(5)
    a = torch.randn(2, 5, 3, dtype=torch.float64)
    wq = torch.randn(2, 5, 3, dtype=torch.float64)
    wr = torch.randn(2, 3, 3, dtype=torch.float64)
    ac = a.clone().requires_grad_()
    ad = a.to(DEV).requires_grad_()
    q, r = torch.linalg.qr(ac)
    ((q * wq).sum() + (r * wr).sum()).backward()
    q, r = torch.linalg.qr(ad)
    ((q * wq.to(DEV)).sum() + (r * wr.to(DEV)).sum()).backward()
    same(ad.grad, ac.grad, 1e-9)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64])
def test_dtypes_cuda_refuses_are_refused(dtype):
    a = torch.ones(3, 3, dtype=dtype).to(DEV)
    with pytest.raises((NotImplementedError, RuntimeError), match="linalg_qr|Half|BFloat16|Long"):
        torch.linalg.qr(a)


def test_geqrf_householder_product_and_ormqr():
    a = torch.randn(2, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    qr, tau = torch.geqrf(a.to(DEV))
    rqr, rtau = torch.geqrf(a)
    same(qr, rqr, 1e-12)
    same(tau, rtau, 1e-12)
    same(
        torch.linalg.householder_product(qr, tau),
        torch.linalg.householder_product(rqr, rtau),
        1e-12,
    )
    for left in (True, False):
        c = (
            torch.randn(2, 5, 4, dtype=torch.float64)
            if left
            else torch.randn(2, 4, 5, dtype=torch.float64)
        )
        for transpose in (False, True):
            got = torch.ormqr(qr, tau, c.to(DEV), left=left, transpose=transpose)
            same(got, torch.ormqr(rqr, rtau, c, left=left, transpose=transpose), 1e-12)


@pytest.mark.parametrize("driver", [None, "gels"])
@pytest.mark.parametrize(
    "shapes", [((6, 3), (6, 2)), ((3, 6), (3, 2)), ((2, 6, 3), (2, 6, 1)), ((6, 3), (6,))], ids=str
)
def test_lstsq_matches_lapack(shapes, driver):
    """The default driver off the CPU is gelsy (rank-revealing: here by our SVD), and
    gels (QR) on request; the solution, residuals, rank and singular values as CPU's."""
    g = torch.Generator().manual_seed(7)
    a = torch.randn(*shapes[0], dtype=torch.float64, generator=g)
    b = torch.randn(*shapes[1], dtype=torch.float64, generator=g)
    got = torch.linalg.lstsq(a.to(DEV), b.to(DEV), driver=driver)
    ref = torch.linalg.lstsq(a, b, driver=driver or "gelsy")
    for x, y in zip(got, ref):
        assert x.shape == y.shape
        if x.numel():
            torch.testing.assert_close(x.cpu(), y, rtol=1e-10, atol=1e-10)


def test_lstsq_rank_deficient():
    g = torch.Generator().manual_seed(8)
    a = (
        torch.randn(6, 2, dtype=torch.float64, generator=g)
        @ torch.randn(4, 2, dtype=torch.float64, generator=g).mT
    )
    b = torch.randn(6, 3, dtype=torch.float64, generator=g)
    got = torch.linalg.lstsq(a.to(DEV), b.to(DEV))  # the minimum-norm solution, rank 2
    ref = torch.linalg.lstsq(a, b)
    assert int(got.rank.cpu()) == 2 == int(ref.rank)
    torch.testing.assert_close(got.solution.cpu(), ref.solution, rtol=1e-10, atol=1e-10)
    a[:, 1] = 0  # R's diagonal exactly zero: gels refuses, as LAPACK's
    with pytest.raises(torch.linalg.LinAlgError, match="does not have full rank"):
        torch.linalg.lstsq(a.to(DEV), b.to(DEV), driver="gels")
