"""Kernel-level tests of issue 17's LDL^T factor/solve (torch_ext/ops/linalg_ldl.py:
pivots bit-equal to LAPACK's sytrf) and CTC loss (ctc_loss.py: forward, log_alpha and
the gradient), against PyTorch's CPU kernels."""

import pytest
import torch

from torch_ext.ops import ctc_loss as K
from torch_ext.ops import linalg_ldl as LDL

from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("n,diag", [(1, 1.0), (5, 1.0), (8, 0.01), (12, 0.01)])
def test_ldl_factor_and_solve(n, diag, device):
    torch.manual_seed(n)
    A = torch.randn(2, n, n, dtype=torch.float64)
    A = A + A.mT
    A.diagonal(dim1=-2, dim2=-1).mul_(diag)  # small diagonal: 2x2 blocks and row swaps
    rLD, rpiv, rinfo = torch.linalg.ldl_factor_ex(A)
    LD = torch.tril(A).mT.contiguous().mT.to(device)  # column major, as PyTorch's meta
    piv = torch.empty(2, n, dtype=torch.int32, device=device)
    info = torch.empty(2, dtype=torch.int32, device=device)
    LDL.ldl_factor(LD, piv, info, False, False)
    assert torch.equal(piv.cpu(), rpiv) and torch.equal(info.cpu(), rinfo)
    assert_close(LD, rLD)
    B = torch.randn(2, n, 3, dtype=torch.float64)
    X = B.mT.clone(memory_format=torch.contiguous_format).mT.to(device)
    LDL.ldl_solve(rLD.to(device), rpiv.to(device), X, False, False)
    assert_close(X, torch.linalg.ldl_solve(rLD, rpiv, B))


def test_ldl_zero_pivot_info(device):
    A = torch.tensor([[0.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    LD = A.tril().mT.contiguous().mT.to(device)
    piv = torch.empty(2, dtype=torch.int32, device=device)
    info = torch.empty((), dtype=torch.int32, device=device)
    LDL.ldl_factor(LD.unsqueeze(0), piv.unsqueeze(0), info.unsqueeze(0), False, False)
    assert info.item() == torch.linalg.ldl_factor_ex(A).info.item() == 1


@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_forward_and_gradient(concatenated, device):
    torch.manual_seed(0)
    T, N, C = 12, 3, 6
    lp = torch.randn(T, N, C, dtype=torch.float64).log_softmax(-1)
    if concatenated:  # repeats, and a target too long for its input (infinite loss)
        tg, il, tlen = torch.tensor([1, 1, 2, 3, 3, 3, 4, 2]), [12, 2, 9], [3, 3, 2]
    else:
        tg, il, tlen = torch.randint(1, C, (N, 5)), [12, 10, 7], [5, 3, 0]
    ref_nll, ref_alpha = torch.ops.aten._ctc_loss(lp, tg, il, tlen, 0, False)
    nll, alpha = K.ctc_loss(lp.to(device), tg.to(device), il, tlen, 0, False)
    assert_close(nll, ref_nll)
    g = torch.rand(N, dtype=torch.float64)
    for zero_inf in (False, True):
        ref = torch.ops.aten._ctc_loss_backward(g, lp, tg, il, tlen, ref_nll, ref_alpha, 0, zero_inf)  # fmt: skip
        res = K.ctc_loss_backward(
            g.to(device), lp.to(device), tg.to(device), il, tlen, nll, alpha, 0, zero_inf
        )
        assert_close(res, ref)
