"""Bad input on native ops: mixed devices, invalid indices."""

import pytest
import torch

import torch_ext

from helpers import DEV


def test_native_op_rejects_cpu_and_device_mix():
    with torch_ext.fallback_mode("silent"):
        with pytest.raises(RuntimeError, match=r"(privateuseone:0.*cpu|cpu.*privateuseone:0)"):
            torch.add(torch.ones(3).to(DEV), torch.ones(3))


@pytest.mark.two_devices
def test_native_op_rejects_two_devices():
    with torch_ext.fallback_mode("silent"):
        with pytest.raises(RuntimeError, match=r"privateuseone:\d.*privateuseone:\d"):
            torch.add(torch.ones(3).to(DEV), torch.ones(3).to(f"{DEV}:1"))


def test_native_op_accepts_zero_dim_cpu_scalar():
    with torch_ext.fallback_mode("silent"):
        y = torch.ones(3).to(DEV) * torch.tensor(4.0)
    assert y.device.type == DEV and y.cpu().tolist() == [4.0, 4.0, 4.0]


def test_copy_to_invalid_device():
    with pytest.raises(RuntimeError, match="Invalid device index 5"):
        torch.zeros(2).to(f"{DEV}:5")


def test_host_alias():
    d = torch.arange(12.0).to(DEV)[2:].view(2, 5)
    if not torch_ext._C._driver_host_addressable():  # a GPU's memory
        with pytest.raises(RuntimeError, match="not host-addressable"):
            torch_ext._C._host_alias(d)
        return
    a = torch_ext._C._host_alias(d)
    assert a.device.type == "cpu" and a.shape == (2, 5) and a.storage_offset() == 2
    a[0, 0] = 100.0
    assert d.cpu()[0, 0].item() == 100.0
    del d
    assert a[1, 4].item() == 11.0  # the alias keeps the device memory alive
