"""Launch plans of the row kernels (softmax, layer/RMS norm, argmax, the reductions:
ops/_rows.py) on both paths, one tile and looped (a small cap forced): a second call
replays the first one's record, and a shape class keeps its plans apart across the cap
(the one-tile decision is a guard on the row length)."""

import pytest
import torch
import torch.nn.functional as F

import torch_ext
from helpers import DEV, force_spec

C = torch_ext._C
CAP = 64  # rows up to 32 take one tile everywhere (the norms' weights and backwards: 32)


@pytest.fixture(autouse=True)
def small_cap(monkeypatch):
    from torch_ext.ops import _rows

    force_spec(monkeypatch, _rows, row_tile_cap=CAP)
    assert C._plan_enabled()
    C._plan_clear()


def recorded_replayed():
    s = C._plan_stats()
    return s["recorded"], s["replayed"]


def _softmax_step(x, w):
    y = torch.softmax(x, -1) * w
    return y, torch.autograd.grad(y.sum(), x)[0]


def _log_softmax_dim0(x, w):
    y = torch.log_softmax(x, 0)
    return y, torch.autograd.grad((y * w[: x.shape[1]]).sum(), x)[0]


def _layer_norm(x, w):
    y = F.layer_norm(x, (x.shape[-1],), w, w)
    return (y,) + torch.autograd.grad((y * y).sum(), (x, w))


def _rms_norm(x, w):
    y = F.rms_norm(x, (x.shape[-1],), w)
    return (y,) + torch.autograd.grad((y * y).sum(), (x, w))


def _argmax(x, w):
    return x.argmax(-1), x.argmin(0), torch.max(x, -1).values


def _reductions(x, w):
    # (torch.var shares the kernel but is no size-generic op: test_second_call_replays)
    return x.amax(-1), x.amin(-1), x.sum(-1), x.mean(-1), x.amax(0)


def _var(x, w):
    return torch.var(x, -1), torch.std(x, -1)


OPS = {
    "softmax": _softmax_step,
    "log_softmax_dim0": _log_softmax_dim0,
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    "argmax": _argmax,
    "reductions": _reductions,
    "var": _var,
}


def _run(fn, rows, width):
    x, w = torch.randn(rows, width) * 3, torch.randn(width)
    xd, wd = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
    got = fn(xd, wd)
    ref = fn(x.requires_grad_(), w.requires_grad_())
    for a, r in zip(got, ref):
        torch.testing.assert_close(a.detach().cpu(), r.detach(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("width", [32, 80], ids=["one_tile", "looped"])
@pytest.mark.parametrize("name", list(OPS))
def test_second_call_replays(name, width):
    recorded0, _ = recorded_replayed()
    _run(OPS[name], 6, width)
    recorded, replayed = recorded_replayed()
    assert recorded > recorded0
    _run(OPS[name], 6, width)
    now_recorded, now_replayed = recorded_replayed()
    assert now_recorded == recorded and now_replayed >= replayed + recorded - recorded0


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm", "reductions"])
def test_shape_class_across_the_cap(name):
    """Row counts replay one plan after two recordings; a width past the cap records
    (the guard fails) and computes right, and the one-tile width still replays."""
    for rows in (33, 34, 35, 36):
        _run(OPS[name], rows, 32)
    recorded, _ = recorded_replayed()
    _run(OPS[name], 37, 32)
    assert recorded_replayed()[0] == recorded  # generalised to a new row count
    _run(OPS[name], 37, 80)
    assert recorded_replayed()[0] > recorded  # past the cap: the looped kernels
    recorded, _ = recorded_replayed()
    _run(OPS[name], 38, 32)
    assert recorded_replayed()[0] == recorded
