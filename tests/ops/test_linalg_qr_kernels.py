"""Kernel-level tests of QR's two stubs (torch_ext/ops/linalg_qr.py): geqrf and orgqr
called through the registry on `device` (CPU tensors under Triton's interpreter by
default) against LAPACK's, through PyTorch's CPU geqrf and householder_product."""

import pytest
import torch

from helpers import fortran, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 5, 5), (3, 1)])
def test_geqrf_then_orgqr_match_lapack(dtype, shape, device):
    g = torch.Generator().manual_seed(sum(shape))
    a = torch.randn(*shape, dtype=dtype, generator=g)
    m, n = shape[-2:]
    k = min(m, n)
    qr = fortran(a.to(device))
    tau = torch.empty(*shape[:-2], k, dtype=dtype, device=device)
    KERNELS["geqrf"](qr, tau)
    ref_qr, ref_tau = torch.geqrf(to_ref(a).double())
    assert_close(qr, ref_qr, dtype, reduce_dim=m)  # R and the reflectors, LAPACK's signs
    assert_close(tau, ref_tau, dtype, reduce_dim=m)
    if m >= n:
        q = qr.clone()  # orgqr works in place on a copy of the reflectors
        out = KERNELS["orgqr"](q, tau)
        assert out is None or out is q
        ref_q = torch.linalg.householder_product(ref_qr, ref_tau)
        assert_close(q, ref_q, dtype, reduce_dim=m)


def test_a_column_already_reduced_takes_no_reflection(device):
    """A column zero below its diagonal: tau 0 (H = I) and the column as it was, as
    LAPACK's dlarfg (not a reflection that flips its sign)."""
    a = torch.tensor([[2.0, 1.0], [0.0, 3.0], [0.0, 4.0]], dtype=torch.float64)
    qr = fortran(a.to(device))
    tau = torch.empty(2, dtype=torch.float64, device=device)
    KERNELS["geqrf"](qr, tau)
    ref_qr, ref_tau = torch.geqrf(a)
    assert tau.cpu()[0].item() == 0.0 and ref_tau[0].item() == 0.0
    torch.testing.assert_close(qr.cpu(), ref_qr)
    torch.testing.assert_close(tau.cpu(), ref_tau)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_applies_q_from_either_side(left, transpose, device):
    g = torch.Generator().manual_seed(4)
    ref_qr, ref_tau = torch.geqrf(torch.randn(5, 3, dtype=torch.float64, generator=g))
    c = torch.randn(*((5, 2) if left else (2, 5)), dtype=torch.float64, generator=g)
    out = fortran(c.to(device))
    KERNELS["ormqr"](fortran(ref_qr.to(device)), ref_tau.to(device), out, left, transpose)
    ref = torch.ormqr(ref_qr, ref_tau, c, left=left, transpose=transpose)
    assert_close(out, ref, torch.float64, reduce_dim=5)
