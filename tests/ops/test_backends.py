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
