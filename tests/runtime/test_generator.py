"""The per-device generator: seeding, state round trip, philox offsets."""

import pytest
import torch

import torch_ext  # noqa: F401
from torch_ext import _C

pu = torch.privateuseone


@pytest.mark.two_devices
def test_manual_seed_reaches_device_generators():
    torch.manual_seed(1234)
    assert pu.initial_seed() == 1234
    with pu.device(1):
        assert pu.initial_seed() == 1234
    pu.manual_seed(99)
    assert pu.initial_seed() == 99
    pu.manual_seed_all(7)
    assert _C._generator_philox(None, 1, 0)[0] == 7


def test_rng_state_round_trip():
    pu.manual_seed(5)
    state = pu.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    first = _C._generator_philox(None, 0, 10)
    assert first == (5, 0)
    assert _C._generator_philox(None, 0, 1) == (5, 12)  # offsets advance in steps of 4
    pu.set_rng_state(state)
    assert _C._generator_philox(None, 0, 10) == first
    assert torch.equal(
        pu.get_rng_state(),
        torch.cat([state[:8], torch.tensor([12, 0, 0, 0, 0, 0, 0, 0], dtype=torch.uint8)]),
    )


@pytest.mark.two_devices
def test_get_set_rng_state_via_torch_random():
    torch.manual_seed(0)
    states = pu.get_rng_state_all()
    a = _C._generator_philox(None, 1, 4)
    pu.set_rng_state_all(states)
    assert _C._generator_philox(None, 1, 4) == a


def test_explicit_generator():
    g = torch.Generator(device="privateuseone")
    assert g.device.type == "privateuseone"
    g.manual_seed(42)
    assert _C._generator_philox(g, 0, 4) == (42, 0)
    assert _C._generator_philox(g, 0, 4) == (42, 4)
    state = g.get_state()
    g2 = torch.Generator(device="privateuseone")
    g2.set_state(state)
    assert _C._generator_philox(g2, 0, 1) == (42, 8)
    assert g.initial_seed() == 42


def test_default_generator_object():
    g = _C._default_generator(0)
    assert isinstance(g, torch.Generator) and g.device == torch.device("privateuseone", 0)
    g.manual_seed(3)
    assert pu.initial_seed() == 3
