"""Printing, torch.save/torch.load of device tensors."""

import io

import pytest
import torch

import torch_ext

from helpers import DEV


def test_print_device_tensor():
    d = torch.arange(6.0).reshape(2, 3).to(DEV)
    with torch_ext.fallback_mode("silent"):  # printing runs a few ops
        text = repr(d)
    assert "device='privateuseone:0'" in text
    assert "[3., 4., 5.]" in text
    assert str(torch.empty(0, device=DEV)).startswith("tensor([]")


def _roundtrip(obj, **kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **kwargs)


@pytest.mark.two_devices
def test_save_load_on_device():
    x = torch.randn(3, 4)
    out = _roundtrip({"a": x.to(DEV), "b": x.to(f"{DEV}:1").t()})
    assert out["a"].device == torch.device(DEV, 0) and torch.equal(out["a"].cpu(), x)
    assert out["b"].device == torch.device(DEV, 1) and torch.equal(out["b"].cpu(), x.t())


@pytest.mark.two_devices
def test_load_map_location():
    x = torch.randn(5)
    cpu = _roundtrip(x.to(DEV), map_location="cpu")
    assert cpu.device.type == "cpu" and torch.equal(cpu, x)
    d1 = _roundtrip(x.to(DEV), map_location=f"{DEV}:1")
    assert d1.device == torch.device(DEV, 1) and torch.equal(d1.cpu(), x)
    from_cpu = _roundtrip(x, map_location=DEV)
    assert from_cpu.device.type == DEV


def test_module_state_dict():
    m = torch.nn.Linear(3, 2).to(DEV)
    state = _roundtrip(m.state_dict())
    m2 = torch.nn.Linear(3, 2).to(DEV)
    m2.load_state_dict(state)
    assert torch.equal(m2.weight.cpu(), m.weight.cpu())
