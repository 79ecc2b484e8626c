"""Kernel-level tests of the linalg family (cdist/pdist, cholesky, triangular
and LU solves): the wrappers called through the registry on `device` (CPU
tensors under Triton's interpreter by default; tests/ops/conftest.py) against
PyTorch's CPU result, forward and backward."""

import pytest
import torch

from helpers import fortran, randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

DTYPES = [torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [1.0, 2.0, float("inf")])
def test_cdist_forward_backward(dtype, p, device):
    x1 = randn((2, 5, 3), dtype, device)
    x2 = randn((2, 4, 3), dtype, device, noncontig=False)
    d = KERNELS["cdist_forward"](x1, x2, p, None)
    r1 = to_ref(x1).requires_grad_()
    r2 = to_ref(x2)
    rd = torch.cdist(r1, r2, p)
    assert_close(d, rd, dtype, reduce_dim=3)
    g = randn(d.shape, dtype, device)
    gx1 = KERNELS["cdist_backward"](g, x1, x2, p, d)
    rd.backward(to_ref(g))
    assert_close(gx1, r1.grad, dtype, reduce_dim=8)


def test_cdist_empty_and_broadcast(device):
    x1 = randn((0, 3), torch.float32, device)
    x2 = randn((4, 3), torch.float32, device)
    assert KERNELS["cdist_forward"](x1, x2, 2.0, None).shape == (0, 4)
    a = randn((1, 5, 2), torch.float32, device)
    b = randn((3, 4, 2), torch.float32, device)
    res = KERNELS["cdist_forward"](a, b, 2.0, None)
    assert_close(res, torch.cdist(to_ref(a), to_ref(b)))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_pdist_forward_backward(p, device):
    x = randn((6, 4), torch.float64, device)
    d = KERNELS["pdist_forward"](x, p)
    rx = to_ref(x).requires_grad_()
    rd = torch.pdist(rx, p)
    assert_close(d, rd, torch.float64)
    g = randn(d.shape, torch.float64, device)
    gx = KERNELS["pdist_backward"](g, x, p, d)
    rd.backward(to_ref(g))
    assert_close(gx, rx.grad, torch.float64, reduce_dim=6)


def _spd(n, dtype, device, batch=()):
    a = torch.randn(*batch, n, n, dtype=torch.float64)
    a = a @ a.mT + n * torch.eye(n, dtype=torch.float64)
    return a.to(dtype).to(device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_in_place(dtype, upper, device):
    a = _spd(5, dtype, device, (2,))
    out = fortran(a)
    info = torch.zeros(2, dtype=torch.int32, device=device)
    KERNELS["cholesky"](out, info, upper)
    ref = torch.linalg.cholesky(to_ref(a), upper=upper)
    part = torch.triu if upper else torch.tril
    assert_close(part(out.cpu()), ref, dtype, reduce_dim=5)
    assert info.cpu().tolist() == [0, 0]


def test_cholesky_reports_not_positive_definite(device):
    a = fortran(-torch.eye(3, dtype=torch.float64).to(device))
    info = torch.zeros((), dtype=torch.int32, device=device)
    KERNELS["cholesky"](a, info, False)
    assert int(info.cpu()) > 0  # the order of the failing minor, as LAPACK says


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_in_place(upper, unit, device):
    part = torch.triu if upper else torch.tril
    a = part(_spd(4, torch.float64, device))
    b = randn((4, 3), torch.float64, device)
    x = fortran(b)
    KERNELS["triangular_solve"](fortran(a), x, True, upper, False, unit)
    ref = torch.linalg.solve_triangular(to_ref(a), to_ref(b), upper=upper, unitriangular=unit)
    assert_close(x, ref, torch.float64, reduce_dim=4)


def test_lu_factor_then_solve(device):
    a = randn((5, 5), torch.float64, device) + 5 * torch.eye(5, dtype=torch.float64).to(device)
    lu = fortran(a)
    piv = torch.zeros(5, dtype=torch.int32, device=device)
    info = torch.zeros((), dtype=torch.int32, device=device)
    KERNELS["lu_factor"](lu, piv, info, True)
    rlu, rpiv = torch.linalg.lu_factor(to_ref(a))
    assert_close(lu, rlu, torch.float64, reduce_dim=5)
    assert piv.cpu().tolist() == rpiv.tolist()
    b = randn((5, 2), torch.float64, device)
    x = fortran(b)
    KERNELS["lu_solve"](lu, piv, x, 0)
    assert_close(x, torch.linalg.solve(to_ref(a), to_ref(b)), torch.float64, reduce_dim=5)
