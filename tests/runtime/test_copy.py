"""Copies of every kind: host<->device, device<->device, across devices,
dtype-converting, non-contiguous, broadcasting, non_blocking from pinned memory."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV


def roundtrip(x, device=DEV):
    return x.to(device).cpu()


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.bool,
        torch.uint8,
        torch.complex64,
    ],
)
def test_host_device_roundtrip(dtype):
    x = (torch.randn(7, 5) * 10).to(dtype)
    assert torch.equal(roundtrip(x), x)


def test_empty_and_scalar():
    assert roundtrip(torch.empty(0, 3)).shape == (0, 3)
    s = torch.tensor(3.5)
    assert torch.equal(roundtrip(s), s)
    assert torch.tensor(7).to(DEV).item() == 7


def test_non_contiguous_host_to_device():
    x = torch.randn(6, 8)
    for view in (x.t(), x[:, ::2], x[1:5, 2:7], x.unsqueeze(0).expand(3, 6, 8)):
        d = view.to(DEV)
        assert d.is_contiguous() or d.stride() == view.stride()
        assert torch.equal(d.cpu(), view)


def test_non_contiguous_device_to_host_and_device():
    x = torch.randn(6, 8)
    d = x.to(DEV)
    assert torch.equal(d.t().cpu(), x.t())
    assert torch.equal(d[:, 1::3].cpu(), x[:, 1::3])
    assert torch.equal(d.t().contiguous().cpu(), x.t().contiguous())
    out = torch.empty(8, 6, device=DEV)
    out.copy_(d.t())
    assert torch.equal(out.cpu(), x.t())


def test_copy_into_non_contiguous_device_destination():
    x = torch.zeros(4, 6)
    d = x.to(DEV)
    src = torch.arange(12.0).reshape(4, 3)
    d[:, ::2] = src.to(DEV)  # device -> strided device view
    x[:, ::2] = src
    assert torch.equal(d.cpu(), x)
    d[:, 1::2].copy_(src)  # host -> strided device view
    x[:, 1::2] = src
    assert torch.equal(d.cpu(), x)


@pytest.mark.parametrize(
    "src_dtype,dst_dtype",
    [
        (torch.float32, torch.float16),
        (torch.float32, torch.int32),
        (torch.int64, torch.float64),
        (torch.bfloat16, torch.float32),
    ],
)
def test_dtype_converting(src_dtype, dst_dtype):
    x = (torch.randn(5, 4) * 100).to(src_dtype)
    ref = x.to(dst_dtype)
    assert torch.equal(x.to(DEV, dst_dtype).cpu(), ref)  # host -> device
    d = x.to(DEV)
    assert torch.equal(d.to(dst_dtype).cpu(), ref)  # device -> device
    assert torch.equal(d.cpu().to(dst_dtype), ref)
    host = torch.empty(5, 4, dtype=dst_dtype)
    host.copy_(d)  # device -> host converting
    assert torch.equal(host, ref)


def test_broadcasting_copy():
    d = torch.zeros(3, 4).to(DEV)
    d.copy_(torch.arange(4.0))
    assert torch.equal(d.cpu(), torch.arange(4.0).expand(3, 4))
    d.copy_(torch.tensor([1.0, 2.0, 3.0]).to(DEV).unsqueeze(1))
    assert torch.equal(d.cpu(), torch.tensor([[1.0], [2.0], [3.0]]).expand(3, 4))


@pytest.mark.two_devices
def test_across_devices():
    x = torch.randn(4, 4)
    d0 = x.to(f"{DEV}:0")
    d1 = d0.to(f"{DEV}:1")
    assert d1.device.index == 1 and torch.equal(d1.cpu(), x)
    back = d1.t().to(f"{DEV}:0", torch.float64)
    assert back.device.index == 0 and torch.equal(back.cpu(), x.t().double())


def test_non_blocking_from_and_to_pinned_memory():
    x = torch.randn(1000).pin_memory()
    assert x.is_pinned()
    d = x.to(DEV, non_blocking=True)
    torch.privateuseone.synchronize()
    assert torch.equal(d.cpu(), x)
    host = torch.empty(1000).pin_memory()
    host.copy_(d, non_blocking=True)
    torch.privateuseone.current_stream().synchronize()
    assert torch.equal(host, x)


def test_views_share_device_memory():
    d = torch.zeros(4, 4).to(DEV)
    v = d.view(16)
    assert v.data_ptr() == d.data_ptr()
    assert d.t().data_ptr() == d.data_ptr()
    assert d.unfold(0, 2, 1).shape == (3, 4, 2)
    assert d.as_strided((2, 2), (4, 1), 1).storage_offset() == 1
    v[3:5].copy_(torch.tensor([1.0, 2.0]))
    assert d.cpu()[0, 3].item() == 1 and d.cpu()[1, 0].item() == 2
    c = torch.zeros(3, dtype=torch.complex64).to(DEV)
    assert torch.view_as_real(c).shape == (3, 2)


def test_resize_and_set():
    d = torch.arange(4.0).to(DEV)
    d.resize_(10)
    assert d.shape == (10,) and torch.equal(d.cpu()[:4], torch.arange(4.0))
    e = torch.empty(0, device=DEV)
    e.set_(d.untyped_storage(), 2, (2, 2), (2, 1))
    assert torch.equal(e.cpu(), d.cpu()[2:6].reshape(2, 2))
    assert e.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
    f = torch.empty(0, device=DEV).set_(d)
    assert f.data_ptr() == d.data_ptr() and f.is_set_to(d)
    g = torch.empty(3, device=DEV).set_()
    assert g.numel() == 0


def test_storage_cpu_roundtrip():
    d = torch.arange(6, dtype=torch.int32).to(DEV)
    s = d.untyped_storage().cpu()
    assert torch.equal(
        torch.tensor([], dtype=torch.int32).set_(s), torch.arange(6, dtype=torch.int32)
    )


def test_conjugate_and_negative_views_copy_without_recursion():
    x = torch.randn(5, dtype=torch.complex64)
    d = x.to("privateuseone")
    assert torch.equal(d.conj().resolve_conj().cpu(), x.conj())
    assert torch.equal(torch._neg_view(d).cpu(), -x)
    z = torch.empty(5, dtype=torch.complex64, device="privateuseone")
    z.copy_(d.conj())
    assert torch.equal(z.cpu(), x.conj())
    back = torch.empty(5, dtype=torch.complex64)
    back.copy_(d.conj())
    assert torch.equal(back, x.conj())
