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
