"""The cuda driver under the runtime: memory, copies, streams, events, and
Triton compiling for the GPU and launching on the current privateuseone stream."""

import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

import torch_ext
from conftest import DEV


def test_device_is_the_gpu():
    assert torch.privateuseone.is_available()
    assert torch.privateuseone.device_count() >= 1
    name = torch.privateuseone.get_device_name(0)
    assert "NVIDIA" in name or "H100" in name or "H200" in name, name
    props = torch.privateuseone.get_device_properties(0)
    assert props.total_memory > 16 << 30


def test_copies_round_trip_and_device_to_device():
    x = torch.randn(1 << 20)
    d = x.to(DEV)
    assert d.device == DEV
    e = d.clone()
    f = torch.empty_like(d)
    f.copy_(e)
    assert torch.equal(f.cpu(), x)


def test_non_blocking_copy_from_pinned_memory():
    x = torch.randn(1 << 22).pin_memory()
    d = x.to(DEV, non_blocking=True)
    back = torch.empty_like(x).pin_memory()
    back.copy_(d, non_blocking=True)
    torch.privateuseone.synchronize()
    assert torch.equal(back, x)


def test_memory_statistics_and_empty_cache():
    torch.privateuseone.synchronize()
    base = torch.privateuseone.memory_allocated()
    t = torch.empty(64 << 20, dtype=torch.uint8, device=DEV)
    assert torch.privateuseone.memory_allocated() >= base + (64 << 20)
    del t
    assert torch.privateuseone.memory_allocated() == base
    torch.privateuseone.empty_cache()
    free, total = torch.privateuseone.mem_get_info()
    assert 0 < free <= total


OOM_SCRIPT = """
import torch, torch_ext
try:
    torch.empty(1 << 46, dtype=torch.uint8, device="privateuseone")  # 64 TiB
    raise SystemExit("no OutOfMemoryError")
except torch.OutOfMemoryError as e:
    print("OOM:", str(e).splitlines()[0])
x = torch.ones(1024).to("privateuseone")
assert float((x + x).cpu().sum()) == 2048
print("usable")
"""


def test_out_of_memory_raises_and_device_stays_usable():
    # In a child process: a crash there is this test's failure, not the run's.
    r = subprocess.run(
        [sys.executable, "-c", OOM_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and "usable" in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:])


def test_events_time_work_on_a_stream():
    s = torch.privateuseone.Stream(priority=-1)
    a = torch.randn(1 << 24).to(DEV)
    start = torch.privateuseone.Event(enable_timing=True)
    end = torch.privateuseone.Event(enable_timing=True)
    with torch.privateuseone.stream(s):
        start.record()
        for _ in range(10):
            a = a + 1
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
    assert s.query()


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=m) * 3.0, mask=m)


def test_triton_uses_our_driver_and_current_stream():
    from triton.runtime import driver

    assert type(driver.active).__name__ == "PrivateUse1CudaDriver"
    s = torch.privateuseone.Stream()
    with torch.privateuseone.stream(s):
        assert driver.active.get_current_stream(0) == torch_ext._C._cuda_current_raw_stream(0)
        assert driver.active.get_current_stream(0) != 0
        x = torch.randn(100_003).to(DEV)
        y = torch.empty_like(x)
        _scale[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    s.synchronize()
    torch.testing.assert_close(y.cpu(), x.cpu() * 3.0)


def test_out_of_range_index_is_reported_without_a_sync_and_touches_nothing():
    """On the GPU the bounds flag comes back asynchronously: the error is
    raised at the next checked op or at synchronize(); memory around the
    operand is unchanged and the device stays usable."""
    base = torch.randn(9, 3)
    based = base.to(DEV)
    xd = based[2:7]
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        xd.index_put_(
            (torch.tensor([5, 5], device=DEV),), torch.ones(2, 3, device=DEV), accumulate=True
        )
        torch.privateuseone.synchronize()
    torch.privateuseone.synchronize()  # reported once: nothing left to report
    assert torch.equal(based.cpu(), base)
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        torch.nn.functional.embedding(torch.tensor([1, -1], device=DEV), xd)
        torch.privateuseone.synchronize()
    good = xd.index_select(0, torch.tensor([4, 0], device=DEV))
    torch.privateuseone.synchronize()
    assert torch.equal(good.cpu(), base[2:7][[4, 0]])
