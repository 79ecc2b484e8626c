"""Linear algebra through PyTorch's generic linalg ops and our four stubs
(torch_ext/ops/linalg.py), on the device against CPU: batches, broadcasting,
rectangular LU, singular and non-positive-definite inputs (info codes and the
errors PyTorch raises), both memory layouts, and gradients."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV


def same(a, b, **kw):
    assert a.device.type == "privateuseone"
    kw.setdefault("rtol", 1e-4 if b.dtype == torch.float32 else 1e-9)
    kw.setdefault("atol", 1e-4 if b.dtype == torch.float32 else 1e-9)
    torch.testing.assert_close(a.cpu(), b, **kw)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_det_inv_solve_batched_and_broadcast(dtype):
    torch.manual_seed(0)
    A = torch.randn(2, 3, 5, 5, dtype=dtype) + 2 * torch.eye(5, dtype=dtype)
    b = torch.randn(3, 5, 2, dtype=dtype)  # broadcast over A's first batch dim
    d = A.to(DEV)
    same(torch.linalg.det(d), torch.linalg.det(A))
    same(torch.linalg.inv(d), torch.linalg.inv(A))
    same(torch.linalg.solve(d, b.to(DEV)), torch.linalg.solve(A, b))
    v = torch.randn(5, dtype=dtype)  # a vector right-hand side
    same(torch.linalg.solve(d, v.to(DEV)), torch.linalg.solve(A, v))
    same(torch.linalg.solve(d, b.mT.to(DEV), left=False), torch.linalg.solve(A, b.mT, left=False))
    same(torch.linalg.inv(d.mT.contiguous()), torch.linalg.inv(A.mT))  # row-major A


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 5)])
def test_lu_factor_pivots_and_rectangular(shape):
    torch.manual_seed(1)
    A = torch.randn(shape, dtype=torch.float64)
    LU, piv = torch.linalg.lu_factor(A.to(DEV))
    LUc, pivc = torch.linalg.lu_factor(A)
    same(LU, LUc)
    assert piv.dtype == torch.int32 and torch.equal(piv.cpu(), pivc)


def test_singular_and_non_positive_definite_inputs():
    A = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    _, _, info = torch.linalg.lu_factor_ex(A.to(DEV))
    assert info.item() == torch.linalg.lu_factor_ex(A)[2].item() == 2
    assert torch.linalg.det(A.to(DEV)).item() == 0
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.inv(A.to(DEV))
    S = torch.tensor([[[4.0, 2.0], [2.0, 3.0]], [[1.0, 2.0], [2.0, 1.0]]])
    L, info = torch.linalg.cholesky_ex(S.to(DEV))
    assert info.cpu().tolist() == torch.linalg.cholesky_ex(S)[1].tolist() == [0, 2]
    same(L[0], torch.linalg.cholesky(S[0]))
    with pytest.raises(torch.linalg.LinAlgError, match="positive-definite"):
        torch.linalg.cholesky(S.to(DEV))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_and_triangular_solves(upper):
    torch.manual_seed(2)
    M = torch.randn(3, 6, 6, dtype=torch.float64)
    S = M @ M.mT + 6 * torch.eye(6, dtype=torch.float64)
    B = torch.randn(3, 6, 4, dtype=torch.float64)
    same(torch.linalg.cholesky(S.to(DEV), upper=upper), torch.linalg.cholesky(S, upper=upper))
    T = torch.linalg.cholesky(S, upper=upper)
    for left in (True, False):
        rhs = B if left else B.mT
        for unit in (False, True):
            same(
                torch.linalg.solve_triangular(
                    T.to(DEV), rhs.to(DEV), upper=upper, left=left, unitriangular=unit
                ),
                torch.linalg.solve_triangular(T, rhs, upper=upper, left=left, unitriangular=unit),
            )
    same(
        torch.cholesky_solve(B.to(DEV), T.to(DEV), upper=upper),
        torch.cholesky_solve(B, T, upper=upper),
    )
    LU, piv = torch.linalg.lu_factor(S)
    for adjoint in (False, True):
        same(
            torch.linalg.lu_solve(LU.to(DEV), piv.to(DEV), B.to(DEV), adjoint=adjoint),
            torch.linalg.lu_solve(LU, piv, B, adjoint=adjoint),
        )


def test_linalg_gradients():
    torch.manual_seed(3)
    A = torch.randn(2, 4, 4, dtype=torch.float64) + 3 * torch.eye(4, dtype=torch.float64)
    b = torch.randn(2, 4, 3, dtype=torch.float64)
    for fn in (
        lambda a, y: torch.linalg.det(a).sum(),
        lambda a, y: torch.linalg.inv(a).pow(2).sum(),
        lambda a, y: torch.linalg.solve(a, y).sin().sum(),
        lambda a, y: torch.linalg.cholesky(a @ a.mT).sum(),
    ):
        ac, yc = A.clone().requires_grad_(), b.clone().requires_grad_()
        ad, yd = A.to(DEV).requires_grad_(), b.to(DEV).requires_grad_()
        fn(ac, yc).backward()
        fn(ad, yd).backward()
        same(ad.grad, ac.grad, rtol=1e-7, atol=1e-8)
        if yc.grad is not None:
            same(yd.grad, yc.grad, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_and_gradient(upper):
    """(L L^T)^-1 from the factor, batched and out=, the factor's gradient; errors as
    PyTorch's."""
    torch.manual_seed(4)
    M = torch.randn(2, 5, 5, dtype=torch.float64)
    L = torch.linalg.cholesky(M @ M.mT + 5 * torch.eye(5, dtype=torch.float64), upper=upper)
    same(torch.cholesky_inverse(L.to(DEV), upper=upper), torch.cholesky_inverse(L, upper=upper))
    out = torch.empty(0, device=DEV, dtype=torch.float64)
    torch.cholesky_inverse(L[0].to(DEV), upper=upper, out=out)
    same(out, torch.cholesky_inverse(L[0], upper=upper))
    lc, ld = L.clone().requires_grad_(), L.to(DEV).requires_grad_()
    torch.cholesky_inverse(lc, upper=upper).sin().sum().backward()
    torch.cholesky_inverse(ld, upper=upper).sin().sum().backward()
    same(ld.grad, lc.grad, rtol=1e-7, atol=1e-8)
    with pytest.raises(RuntimeError, match="square"):
        torch.cholesky_inverse(torch.randn(3, 4, device=DEV))
