"""spec / spec_func: shared code asks by name, the active driver answers."""

import pytest

from torch_ext import backends


@pytest.fixture
def driver(monkeypatch):
    def use(name):
        monkeypatch.setattr(backends, "active_driver", lambda: name)

    return use


def test_host_specialisations(driver):
    driver("host")
    assert backends.spec("reduction_splits", 1, 10**6) == 1
    assert backends.spec_func("pointwise_block") is not None
    assert backends.spec("no_such_specialisation") is None


def test_cuda_specialisations(driver):
    driver("cuda")
    assert backends.spec_func("tanh") is not None  # libdevice-based
    assert backends.spec("pointwise_block", 10) is None  # shared default applies


def test_unknown_driver_has_none(driver):
    driver("no_such_driver")
    assert backends.spec_func("tanh") is None
    assert backends.spec("mm_config", 1, 1, 1, None) is None


def test_host_bf16_cast_rounds_to_nearest_even():
    """The interpreter's float32 -> bfloat16 cast truncates; the host driver's
    rounds as a GPU (and torch) does, NaN and infinities included."""
    import numpy as np
    import torch

    from torch_ext.backends.host.spec import _bf16_round_nearest

    g = torch.Generator().manual_seed(0)
    x = torch.randn(20000, generator=g) * torch.exp(torch.randn(20000, generator=g) * 20)
    special = [float("inf"), -float("inf"), 3.3895e38, -3.3895e38, 0.0, -0.0, 1e-40, -1e-40]
    x = torch.cat([x, torch.tensor(special)])
    got = _bf16_round_nearest(x.numpy())
    want = x.bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(got, want)
    nan = _bf16_round_nearest(np.array([float("nan"), -float("nan")], dtype=np.float32))
    assert torch.isnan(torch.from_numpy(nan.view(np.int16)).view(torch.bfloat16)).all()
