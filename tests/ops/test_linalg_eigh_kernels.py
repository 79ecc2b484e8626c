"""Kernel-level test of the Jacobi eigh stub (torch_ext/ops/linalg_eigh.py) through the
registry on `device` (CPU tensors under Triton's interpreter by default) against
LAPACK's eigh: the referenced triangle only, ascending values, orthonormal vectors."""

import pytest
import torch

from helpers import fortran
from torch_ext.ops import KERNELS
from torch_ext.ops.linalg_eigh import rounds


def testrounds_pair_every_index_with_every_other_once():
    for n in (2, 3, 6, 7):
        seen = [tuple(sorted(pq)) for P, Q in rounds(n) for pq in zip(P, Q)]
        assert sorted(seen) == [(p, q) for p in range(n) for q in range(p + 1, n)]
        assert all(len(set(P + Q)) == len(P + Q) for P, Q in rounds(n))  # disjoint


@pytest.mark.parametrize("upper", [False, True])
def test_eigh_stub_reads_one_triangle(upper, device):
    g = torch.Generator().manual_seed(2)
    s = torch.randn(2, 5, 5, dtype=torch.float64, generator=g)
    s = s + s.mT
    junk = torch.randn(2, 5, 5, dtype=torch.float64, generator=g)
    keep = (
        torch.triu(torch.ones(5, 5, dtype=torch.bool))
        if upper
        else torch.tril(torch.ones(5, 5, dtype=torch.bool))
    )
    a = torch.where(keep, s, junk)  # the other triangle must not be read
    vecs = fortran(a).to(device)
    vals = torch.empty(2, 5, dtype=torch.float64, device=device)
    infos = torch.full((2,), 7, dtype=torch.int32, device=device)
    KERNELS["linalg_eigh"](vals, vecs, infos, upper, True)
    ref = torch.linalg.eigvalsh(s)
    torch.testing.assert_close(vals.cpu(), ref, rtol=1e-12, atol=1e-12)
    v = vecs.cpu()
    torch.testing.assert_close(v.mT @ v, torch.eye(5, dtype=torch.float64).expand(2, 5, 5))
    torch.testing.assert_close(v @ torch.diag_embed(vals.cpu()) @ v.mT, s)
    assert infos.cpu().tolist() == [0, 0]


def test_unconverged_sweeps_set_infos(device, monkeypatch):
    """Matrices the sweeps leave unconverged get infos 1 (PyTorch then raises, naming
    linalg.eigh); one sweep is too few for a random 6 x 6."""
    from torch_ext.ops import linalg_eigh

    monkeypatch.setattr(linalg_eigh, "MAX_SWEEPS", 1)
    s = torch.randn(2, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    vecs = fortran(s + s.mT).to(device)
    vals = torch.empty(2, 6, dtype=torch.float64, device=device)
    infos = torch.zeros(2, dtype=torch.int32, device=device)
    KERNELS["linalg_eigh"](vals, vecs, infos, False, True)
    assert infos.cpu().tolist() == [1, 1]
