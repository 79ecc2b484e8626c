"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the linalg
family: cdist and pdist (forward and backward)."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, same


def grads_both(fn, *xs):
    """fn's value and gradients on CPU and on the device."""
    cpu = [x.clone().requires_grad_() for x in xs]
    dev = [x.to(DEV).requires_grad_() for x in xs]
    rc, rd = fn(*cpu), fn(*dev)
    g = torch.randn(rc.shape)
    rc.backward(g)
    rd.backward(g.to(DEV))
    return rc, rd, [x.grad for x in cpu], [x.grad for x in dev]


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("rows", [(4, 6), (30, 27)])  # 30 > 25: the mm path for p = 2
def test_cdist_forward_backward(p, rows):
    torch.manual_seed(0)
    x1, x2 = torch.randn(2, rows[0], 5), torch.randn(1, rows[1], 5)
    rc, rd, gc, gd = grads_both(lambda a, b: torch.cdist(a, b, p), x1, x2)
    same(rd, rc.detach(), rtol=1e-4, atol=1e-4)
    if p != 0:
        for a, b in zip(gd, gc):
            same(a, b, rtol=1e-3, atol=1e-4)
    for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        same(
            torch.cdist(x1.to(DEV), x2.to(DEV), compute_mode=mode),
            torch.cdist(x1, x2, compute_mode=mode),
            rtol=1e-4,
            atol=1e-4,
        )


@pytest.mark.parametrize("p", [1.0, 2.0, 2.5, float("inf")])
def test_pdist_forward_backward(p):
    torch.manual_seed(1)
    x = torch.randn(7, 4)
    rc, rd, gc, gd = grads_both(lambda a: F.pdist(a, p), x)
    same(rd, rc.detach(), rtol=1e-5, atol=1e-5)
    same(gd[0], gc[0], rtol=1e-4, atol=1e-5)


def test_distance_errors():
    with pytest.raises(RuntimeError, match="same number of columns"):
        torch.cdist(torch.randn(3, 4, device=DEV), torch.randn(3, 5, device=DEV))
    with pytest.raises(RuntimeError, match="non-negative p"):
        torch.cdist(torch.randn(3, 4, device=DEV), torch.randn(3, 4, device=DEV), p=-1)
