"""Per-call numbers in launch plans (csrc/launch/PlanKey.h, ops/_launch.py CallNumber):
the foreach ScalarList overloads leave their numbers out of the key, so an optimizer
whose step sizes change every step (Adam's bias corrections) replays one plan with
each step's numbers instead of recording a new plan per step."""

import copy

import pytest
import torch

import torch_ext
from helpers import DEV as DEVICE
from torch_ext.ops import _launch

C = torch_ext._C


@pytest.fixture(autouse=True)
def fresh_plans():
    assert C._plan_enabled()
    C._plan_clear()


def _lists(seed, n=3):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(5, 3 + i, generator=g) for i in range(n)]


def _counts(before=None):
    """(recorded, replayed, cached plans); the first two since `before`."""
    s = C._plan_stats()
    if before is None:
        return s["recorded"], s["replayed"], s["entries"]
    return s["recorded"] - before[0], s["replayed"] - before[1], s["entries"]


@pytest.mark.parametrize(
    "op",
    [
        lambda xs, ys, zs, s: torch._foreach_addcdiv_(xs, ys, zs, s),
        lambda xs, ys, zs, s: torch._foreach_addcmul_(xs, ys, zs, s),
        lambda xs, ys, zs, s: torch._foreach_div_(xs, s),
        lambda xs, ys, zs, s: torch._foreach_mul_(xs, s),
        lambda xs, ys, zs, s: torch._foreach_add_(xs, s),
    ],
    ids=["addcdiv_", "addcmul_", "div_", "mul_", "add_"],
)
def test_one_plan_replays_each_calls_numbers(op):
    xs, ys = _lists(1), _lists(2)
    zs = [t.abs() + 1 for t in _lists(3)]
    dx, dy, dz = ([t.to(DEVICE) for t in lst] for lst in (xs, ys, zs))
    before = _counts()
    for step in range(1, 6):
        numbers = [0.37 * step + i for i in range(3)]  # new values every call
        op(dx, dy, dz, numbers)
        op(xs, ys, zs, numbers)
        for a, b in zip(dx, xs):
            torch.testing.assert_close(a.cpu(), b)
    recorded, replayed, entries = _counts(before)
    assert (recorded, replayed) == (1, 4), C._plan_stats()["reasons"]
    assert entries == 1


def test_integers_stay_in_the_key():
    # ints are passed as they are (Triton specialises on them): a new plan per value
    xs = _lists(4)
    dx = [t.to(DEVICE) for t in xs]
    before = _counts()
    for numbers in ([1, 2, 3], [4, 5, 6], [1, 2, 3]):
        torch._foreach_add_(dx, numbers)
        torch._foreach_add_(xs, numbers)
    for a, b in zip(dx, xs):
        torch.testing.assert_close(a.cpu(), b)
    recorded, replayed, _ = _counts(before)
    assert (recorded, replayed) == (2, 1)


def test_unmarked_numbers_keep_the_op_on_python(monkeypatch):
    # A declared op whose Python used a number without marking it must not replay
    # a stale value: the recording fails and every call runs its Python.
    monkeypatch.setattr(_launch, "call_numbers", lambda values, arg: values)
    xs = _lists(5)
    dx = [t.to(DEVICE) for t in xs]
    before = _counts()
    for step in range(1, 4):
        torch._foreach_mul_(dx, [1.5 * step, 0.5, 2.0 + step])
        torch._foreach_mul_(xs, [1.5 * step, 0.5, 2.0 + step])
    for a, b in zip(dx, xs):
        torch.testing.assert_close(a.cpu(), b)
    assert _counts(before)[:2] == (0, 0)
    stats = C._plan_stats()
    assert stats["reasons"] == {"foreach_mul__ScalarList: per-call number not marked": 1}


OPTIMIZERS = {
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=True),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, foreach=True),
    "sgd_nesterov_wd": lambda p: torch.optim.SGD(
        p, lr=1e-2, momentum=0.9, nesterov=True, weight_decay=1e-3, foreach=True
    ),
    # fused: lr is the per-call number of _fused_adamw_ / _fused_sgd_
    "adamw_fused": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, fused=True),
    "sgd_fused": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, fused=True),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_with_a_schedule_replay_one_plan_per_op(name):
    # a learning-rate schedule changes lr (SGD's alpha, AdamW's decay factor, Adam's
    # step sizes) every step: all per-call numbers
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    dev = copy.deepcopy(ref).to(DEVICE)
    opt_ref, opt_dev = OPTIMIZERS[name](ref.parameters()), OPTIMIZERS[name](dev.parameters())
    schedules = [
        torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1 / (1 + s)) for o in (opt_ref, opt_dev)
    ]
    x = torch.randn(4, 6)
    entries = []
    for _ in range(6):
        for m, opt, inp in ((ref, opt_ref, x), (dev, opt_dev, x.to(DEVICE))):
            opt.zero_grad()
            m(inp).square().mean().backward()
            opt.step()
        for sched in schedules:
            sched.step()
        entries.append(C._plan_stats()["entries"])
    for a, b in zip(dev.parameters(), ref.parameters()):
        torch.testing.assert_close(a.detach().cpu(), b.detach(), rtol=1e-5, atol=1e-6)
    # after the first steps nothing new is recorded: the bias corrections are per-call
    assert entries[-1] == entries[2], entries
    reasons = C._plan_stats()["reasons"]
    assert not any("ScalarList" in r for r in reasons), reasons
