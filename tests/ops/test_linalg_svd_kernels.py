"""Kernel-level test of the one-sided Jacobi SVD stub (torch_ext/ops/linalg_svd.py)
through the registry on `device` (CPU tensors under Triton's interpreter by default)
against LAPACK's singular values, with orthonormal singular vectors that rebuild A."""

import pytest
import torch

from torch_ext.ops import KERNELS


@pytest.mark.parametrize("shape", [(6, 4), (4, 6)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_stub(shape, full, device):
    g = torch.Generator().manual_seed(shape[0])
    a = torch.randn(2, *shape, dtype=torch.float64, generator=g)
    m, n = shape
    k = min(m, n)
    U = torch.empty(2, m, m if full else k, dtype=torch.float64, device=device)
    S = torch.empty(2, k, dtype=torch.float64, device=device)
    Vh = torch.empty(2, n if full else k, n, dtype=torch.float64, device=device)
    info = torch.full((2,), 7, dtype=torch.int32, device=device)
    src = a.to(device)
    KERNELS["svd"](src, full, True, None, U, S, Vh, info)
    assert torch.equal(src.cpu(), a)  # A is read, not written
    torch.testing.assert_close(S.cpu(), torch.linalg.svdvals(a), rtol=1e-12, atol=1e-12)
    u, s, vh = U.cpu(), S.cpu(), Vh.cpu()
    torch.testing.assert_close((u[..., :k] * s.unsqueeze(1)) @ vh[..., :k, :], a)
    for q in (u.mT @ u, vh @ vh.mT):
        torch.testing.assert_close(q, torch.eye(q.shape[-1], dtype=torch.float64).expand_as(q))
    assert info.cpu().tolist() == [0, 0]
