"""torch.linalg.eigh and eigvalsh on the device (PyTorch's structured impl over our
Jacobi stub, torch_ext/ops/linalg_eigh.py) against CPU's LAPACK: both triangles,
batches, repeated eigenvalues, 1 x 1 and empty matrices, gradients, and the dtypes
CUDA refuses refused. Eigenvectors are compared up to each column's sign (LAPACK's
is its own), and through V diag(L) V^T where eigenvalues repeat."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV


def _signed(v):
    """Each column with its largest-magnitude entry made positive."""
    i = v.abs().argmax(dim=-2, keepdim=True)
    return v * torch.sign(torch.gather(v, -2, i))


def _sym(*shape, dtype=torch.float64, seed=0):
    a = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))
    return a + a.mT


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigh_matches_lapack(dtype):
    a = _sym(3, 6, 6, dtype=dtype, seed=1)
    vals, vecs = torch.linalg.eigh(a.to(DEV))
    rvals, rvecs = torch.linalg.eigh(a)
    tol = 2e-5 if dtype == torch.float32 else 1e-12
    assert vals.device.type == "privateuseone" and vals.dtype == dtype
    torch.testing.assert_close(vals.cpu(), rvals, rtol=tol, atol=tol)
    torch.testing.assert_close(_signed(vecs.cpu()), _signed(rvecs), rtol=tol * 10, atol=tol * 10)


def test_eigvalsh_triangles_and_small_sizes():
    a = torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    for uplo in ("L", "U"):  # a non-symmetric input: only the named triangle counts
        got = torch.linalg.eigvalsh(a.to(DEV), UPLO=uplo)
        torch.testing.assert_close(got.cpu(), torch.linalg.eigvalsh(a, UPLO=uplo))
    for shape in ((1, 1), (0, 3, 3), (2, 0, 0)):
        x = _sym(*shape, seed=4)
        vals, vecs = torch.linalg.eigh(x.to(DEV))
        rvals, rvecs = torch.linalg.eigh(x)
        assert vals.shape == rvals.shape and vecs.shape == rvecs.shape
        torch.testing.assert_close(vals.cpu(), rvals)
        torch.testing.assert_close(vecs.cpu().abs(), rvecs.abs())


def test_repeated_eigenvalues_reconstruct():
    q, _ = torch.linalg.qr(torch.randn(5, 5, dtype=torch.float64))
    a = q @ torch.diag(torch.tensor([2.0, 2.0, 2.0, -1.0, 5.0], dtype=torch.float64)) @ q.mT
    vals, vecs = torch.linalg.eigh(a.to(DEV))
    torch.testing.assert_close(
        vals.cpu(), torch.tensor([-1.0, 2.0, 2.0, 2.0, 5.0], dtype=torch.float64)
    )
    v = vecs.cpu()
    torch.testing.assert_close(v @ torch.diag(vals.cpu()) @ v.mT, a)
    torch.testing.assert_close(v.mT @ v, torch.eye(5, dtype=torch.float64))
    vals, vecs = torch.linalg.eigh(torch.eye(3, dtype=torch.float64).to(DEV))
    assert torch.equal(vals.cpu(), torch.ones(3, dtype=torch.float64))


def test_eigh_gradients():
    a = _sym(2, 4, 4, seed=5)
    w = torch.randn(2, 4, dtype=torch.float64)
    grads = []
    for dev in ("cpu", DEV):
        x = a.to(dev, copy=True).requires_grad_()
        vals, vecs = torch.linalg.eigh(x)
        # sign-invariant in each eigenvector: its squared entries
        loss = (vals * w.to(dev)).sum() + (vecs.pow(2) * torch.arange(4.0, device=dev)).sum()
        loss.backward()
        grads.append(x.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_dtypes_cuda_refuses_are_refused(dtype):
    with pytest.raises(NotImplementedError, match="_linalg_eigh"):
        torch.linalg.eigh(torch.eye(3, dtype=dtype).to(DEV))
