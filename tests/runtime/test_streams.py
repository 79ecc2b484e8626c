"""Streams, events and synchronisation."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV

pu = torch.privateuseone


@pytest.mark.two_devices
def test_default_and_current_stream():
    s = pu.current_stream()
    assert s.stream_id == 0 and s.device == torch.device(DEV, 0)
    assert s == pu.default_stream()
    assert torch.accelerator.current_stream().stream_id == 0
    assert pu.current_stream(1).device == torch.device(DEV, 1)


def test_new_streams_and_stream_context():
    s1, s2 = pu.Stream(), pu.Stream(priority=-1)
    assert s1 != s2 and s1.stream_id != 0
    assert s2.priority == -1 and s1.priority == 0
    with pu.stream(s1):
        assert pu.current_stream() == s1
        with pu.stream(s2):
            assert pu.current_stream() == s2
        assert pu.current_stream() == s1
    assert pu.current_stream().stream_id == 0


@pytest.mark.two_devices
def test_stream_on_other_device_switches_device():
    s = pu.Stream(device=1)
    assert s.device_index == 1
    with pu.stream(s):
        assert pu.current_device() == 1
        assert pu.current_stream() == s
        assert torch.empty(1, device=DEV).device.index == 1
    assert pu.current_device() == 0


def test_stream_from_pool_and_generic_api():
    s = torch.Stream(device=DEV)
    assert s.device_type == 20 and s.device.type == DEV
    assert s.query()
    s.synchronize()
    e = s.record_event()
    assert e.query()
    s.wait_stream(pu.current_stream())


def test_events_and_elapsed_time():
    start, end = pu.Event(enable_timing=True), pu.Event(enable_timing=True)
    assert isinstance(start, pu.Event)
    start.record()
    x = torch.ones(1 << 16).to(DEV)
    x.cpu()
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    ms = start.elapsed_time(end)
    assert 0 <= ms < 60_000
    pu.current_stream().wait_event(end)
    end.wait(pu.Stream())


@pytest.mark.two_devices
def test_tensor_record_stream_and_synchronize():
    s = pu.Stream()
    x = torch.ones(10).to(DEV)
    x.record_stream(s)
    pu.synchronize()
    torch.accelerator.synchronize(1)
    assert x.cpu().sum().item() == 10


def test_copy_in_side_stream():
    s = pu.Stream()
    with pu.stream(s):
        y = torch.arange(5.0).to(DEV)
    s.synchronize()
    assert y.cpu().tolist() == [0, 1, 2, 3, 4]
