"""torch.linalg.svd / svdvals and what builds on them (torch.svd, pinv, matrix_rank,
the nuclear and spectral norms) on the device (PyTorch's structured impl over our
Jacobi stub, torch_ext/ops/linalg_svd.py) against CPU's LAPACK: tall, wide, square,
batched, rank-deficient and empty matrices, full and reduced, gradients, and the
dtypes CUDA refuses refused. Singular vectors are checked through orthonormality and
the product they rebuild (each (u, v) pair is unique up to sign only)."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV


def _check(a, full, tol):
    U, S, Vh = torch.linalg.svd(a.to(DEV), full_matrices=full)
    rU, rS, rVh = torch.linalg.svd(a, full_matrices=full)
    assert (U.shape, S.shape, Vh.shape) == (rU.shape, rS.shape, rVh.shape)
    assert U.device.type == "privateuseone" and S.dtype == a.dtype
    torch.testing.assert_close(S.cpu(), rS, rtol=tol, atol=tol)
    k = S.shape[-1]
    u, s, vh = U.cpu(), S.cpu(), Vh.cpu()
    torch.testing.assert_close(
        (u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], a, rtol=tol, atol=tol
    )
    for q in (u.mT @ u, vh @ vh.mT):
        eye = torch.eye(q.shape[-1], dtype=a.dtype).expand_as(q)
        torch.testing.assert_close(q, eye, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (6, 1)], ids=str)
def test_svd_matches_lapack(shape, full, dtype):
    a = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(shape[-1]))
    _check(a, full, 3e-5 if dtype == torch.float32 else 1e-12)


def test_rank_deficient_and_empty():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(6, 2, dtype=torch.float64, generator=g) @ torch.randn(
        2, 4, dtype=torch.float64, generator=g
    )  # rank 2: U's other columns are a completion
    for full in (False, True):
        _check(a, full, 1e-12)
    _check(torch.zeros(3, 3, dtype=torch.float64), True, 0)
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        e = torch.zeros(shape, dtype=torch.float64)
        for full in (False, True):
            got = torch.linalg.svd(e.to(DEV), full_matrices=full)
            ref = torch.linalg.svd(e, full_matrices=full)
            for g_, r_ in zip(got, ref):
                assert torch.equal(g_.cpu(), r_)


def test_what_builds_on_svd():
    g = torch.Generator().manual_seed(2)
    a = torch.randn(5, 2, dtype=torch.float64, generator=g) @ torch.randn(
        2, 4, dtype=torch.float64, generator=g
    )
    d = a.to(DEV)
    torch.testing.assert_close(torch.linalg.svdvals(d).cpu(), torch.linalg.svdvals(a))
    assert int(torch.linalg.matrix_rank(d).cpu()) == 2
    torch.testing.assert_close(torch.linalg.pinv(d).cpu(), torch.linalg.pinv(a))
    for ord_ in ("nuc", 2, -2):
        torch.testing.assert_close(
            torch.linalg.matrix_norm(d, ord=ord_).cpu(), torch.linalg.matrix_norm(a, ord=ord_)
        )
    u, s, v = torch.svd(d)
    torch.testing.assert_close(((u * s) @ v.mT).cpu(), a)  # torch.svd returns V, not Vh


def test_svd_gradients():
    a = torch.randn(2, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    w = torch.randn(2, 3, dtype=torch.float64)
    grads = []
    for dev in ("cpu", DEV):
        x = a.to(dev, copy=True).requires_grad_()
        U, S, Vh = torch.linalg.svd(x, full_matrices=False)
        # sign-invariant in each singular pair: the values and U's squared entries
        loss = (S * w.to(dev)).sum() + (U.pow(2) * torch.arange(3.0, device=dev)).sum()
        loss.backward()
        grads.append(x.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_dtypes_cuda_refuses_are_refused(dtype):
    with pytest.raises(NotImplementedError, match="_linalg_svd"):
        torch.linalg.svd(torch.eye(3, dtype=dtype).to(DEV))
