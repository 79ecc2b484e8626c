"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the random family
(distributions, reproducibility, randperm/multinomial, repeat)."""

import torch

from torch_ext.ops import advanced_index as A
from torch_ext.ops import random

from helpers import randn
from helpers import assert_kernel_close as assert_close


def test_repeat_randperm_multinomial(device):
    x = randn((2, 3), torch.float32, device)
    for reps in ([2, 3], [1, 2, 1], [2, 0]):
        assert_close(A.repeat(x, reps), x.cpu().repeat(*reps))
    out = torch.empty(50, dtype=torch.int64, device=device)
    A.randperm_out(50, None, out)
    assert sorted(out.cpu().tolist()) == list(range(50))
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1, 1, 1, 1.0]])
    s = A.multinomial(p.to(device), 4000, True).cpu()
    freq = torch.stack([(s[0] == k).float().mean() for k in range(4)])
    assert (freq - p[0]).abs().max() < 0.03
    s = A.multinomial(p.to(device), 3, False).cpu()
    assert sorted(s[0].tolist()) == [0, 2, 3] and len(set(s[1].tolist())) == 3


def test_random_distributions(device):
    n = 20000
    t = torch.empty(n, device=device)
    random.normal(t, 1.0, 2.0)
    assert abs(t.cpu().mean() - 1) < 0.1 and abs(t.cpu().std() - 2) < 0.1
    random.uniform((t,), (), t.dtype, -1, 3)
    tc = t.cpu()
    assert tc.min() >= -1 and tc.max() < 3 and abs(tc.mean() - 1) < 0.1
    random.bernoulli_scalar(t, 0.3)
    assert abs(t.cpu().mean() - 0.3) < 0.02
    p = torch.linspace(0, 1, n).to(device)
    random.bernoulli_tensor(t, p)
    assert abs(t.cpu().mean() - 0.5) < 0.02
    i = torch.empty(n, dtype=torch.int64, device=device)
    random.random_from_to((i,), (), i.dtype, 10, 5)
    ic = i.cpu()
    assert ic.min() == 5 and ic.max() == 14
    random.exponential((t,), (), t.dtype, 2.0)
    assert abs(t.cpu().mean() - 0.5) < 0.05
    out, keep = random.native_dropout(torch.ones(n).to(device), 0.25, True)
    assert abs(keep.cpu().float().mean() - 0.75) < 0.02
    assert_close(out, keep.cpu().float() / 0.75)
    g = randn((n,), torch.float32, device)
    assert_close(random.native_dropout_backward(g, keep, 1 / 0.75), g.cpu() * keep.cpu() / 0.75)


def test_random_reproducible(device, monkeypatch):
    # Same (seed, offset) -> same values; the generator itself is the runtime's.
    state = {"offset": 0}

    def fake_philox(generator, dev, increment):
        offset = state["offset"]
        state["offset"] += increment
        return 1234, offset

    monkeypatch.setattr(random, "philox", fake_philox)
    a = torch.empty(100, device=device)
    random.normal(a, 0.0, 1.0)
    state["offset"] = 0
    b = torch.empty(100, device=device)
    random.normal(b, 0.0, 1.0)
    c = torch.empty(100, device=device)
    random.normal(c, 0.0, 1.0)
    assert torch.equal(a.cpu(), b.cpu()) and not torch.equal(b.cpu(), c.cpu())
