"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
indexing family: embedding_bag."""

import pytest

import torch
import torch.nn.functional as F

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV


def run(fn, weight, *args, psw=None):
    wc = weight.clone().requires_grad_()
    wd = weight.to(DEV).requires_grad_()
    pc = psw.clone().requires_grad_() if psw is not None else None
    pd = psw.to(DEV).requires_grad_() if psw is not None else None
    rc = fn(wc, *args, pc)
    rd = fn(wd, *[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args], pd)
    torch.testing.assert_close(rd.cpu(), rc.detach(), rtol=1e-6, atol=1e-6)
    g = torch.randn(rc.shape, dtype=rc.dtype)
    rc.backward(g)
    rd.backward(g.to(DEV))
    torch.testing.assert_close(wd.grad.cpu(), wc.grad, rtol=1e-6, atol=1e-6)
    if psw is not None:
        torch.testing.assert_close(pd.grad.cpu(), pc.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag_modes(mode, include_last_offset, padding_idx):
    torch.manual_seed(0)
    weight = torch.randn(10, 4, dtype=torch.float64)
    idx = torch.tensor([1, 3, 5, 3, 9, 0, 2, 2, 7])
    offsets = torch.tensor([0, 2, 2, 6, 9]) if include_last_offset else torch.tensor([0, 2, 2, 6])
    run(
        lambda w, i, o, p: F.embedding_bag(
            i, w, o, mode=mode, include_last_offset=include_last_offset, padding_idx=padding_idx
        ),
        weight,
        idx,
        offsets,
    )


def test_embedding_bag_2d_input_and_per_sample_weights_and_freq_scaling():
    torch.manual_seed(1)
    weight = torch.randn(8, 5, dtype=torch.float64)
    idx2 = torch.randint(0, 8, (3, 4))
    run(lambda w, i, p: F.embedding_bag(i, w, mode="mean"), weight, idx2)
    # scale_grad_by_freq: each row's gradient divided by how often its index occurs (the
    # definition; torch 2.13's CPU kernel scales some rows differently, so no CPU comparison)
    wd = weight.to(DEV).requires_grad_()
    F.embedding_bag(idx2.to(DEV), wd, mode="sum", scale_grad_by_freq=True).sum().backward()
    present = torch.bincount(idx2.flatten(), minlength=8) > 0
    torch.testing.assert_close(wd.grad.cpu(), present.double().unsqueeze(1).expand(8, 5))
    idx = torch.randint(0, 8, (7,))
    off = torch.tensor([0, 3, 5])
    run(
        lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
        weight,
        idx,
        off,
        psw=torch.rand(7, dtype=torch.float64),
    )


def test_embedding_bag_errors():
    w = torch.randn(5, 2, device=DEV)
    with pytest.raises(IndexError, match="out of bounds"):
        F.embedding_bag(torch.tensor([1, 7], device=DEV), w, torch.tensor([0], device=DEV))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(torch.tensor([1, 2], device=DEV), w, torch.tensor([1], device=DEV))
