"""The caching allocator: statistics, reuse, empty_cache, out-of-memory."""

import pytest
import torch

import torch_ext  # noqa: F401

from helpers import DEV, run_python

pu = torch.privateuseone


def test_stats_return_to_baseline():
    base = pu.memory_allocated()
    base_count = pu.memory_stats()["allocation.all.current"]
    x = torch.empty(1000, device=DEV)  # 4000 bytes -> one 4096-byte block
    y = torch.empty(1 << 20, device=DEV)
    assert pu.memory_allocated() >= base + 4000 + (4 << 20)
    assert pu.memory_stats()["allocation.all.current"] == base_count + 2
    assert torch.accelerator.memory_allocated() == pu.memory_allocated()
    del x, y
    assert pu.memory_allocated() == base
    assert pu.memory_stats()["allocation.all.current"] == base_count


def test_peak_and_reset():
    pu.reset_peak_memory_stats()
    base = pu.memory_allocated()
    x = torch.empty(4 << 20, dtype=torch.uint8, device=DEV)
    del x
    assert pu.max_memory_allocated() >= base + (4 << 20)
    pu.reset_peak_memory_stats()
    assert pu.max_memory_allocated() == pu.memory_allocated() == base
    assert torch.accelerator.max_memory_allocated() == base


def test_caching_reuses_blocks_and_empty_cache_releases():
    pu.empty_cache()
    x = torch.empty(3 << 20, dtype=torch.uint8, device=DEV)
    ptr = x.data_ptr()
    segments = pu.memory_stats()["segment.all.current"]
    reserved = pu.memory_reserved()
    del x
    assert pu.memory_reserved() == reserved  # kept in the cache
    y = torch.empty(3 << 20, dtype=torch.uint8, device=DEV)
    assert y.data_ptr() == ptr  # the same block again
    assert pu.memory_stats()["segment.all.current"] == segments
    del y
    pu.empty_cache()
    assert pu.memory_reserved() == reserved - (3 << 20)
    assert pu.memory_stats()["num_device_free"] >= 1


@pytest.mark.two_devices
def test_stats_per_device():
    base1 = pu.memory_allocated(1)
    base0 = pu.memory_allocated(0)
    x = torch.empty(1 << 20, device=f"{DEV}:1")
    assert pu.memory_allocated(1) == base1 + (4 << 20)
    assert pu.memory_allocated(0) == base0
    del x


def test_stats_keys_like_cuda():
    stats = pu.memory_stats()
    for key in (
        "allocated_bytes.all.current",
        "allocated_bytes.all.peak",
        "reserved_bytes.all.current",
        "active_bytes.all.current",
        "requested_bytes.all.current",
        "allocation.all.allocated",
        "segment.large_pool.current",
        "num_alloc_retries",
        "num_ooms",
    ):
        assert key in stats
    assert set(torch.accelerator.memory_stats()) >= {"allocated_bytes.all.current"}


def test_record_stream_delays_reuse_until_stream_done():
    s = pu.Stream()
    x = torch.empty(1 << 20, device=DEV)
    x.record_stream(s)
    del x  # host streams finish eagerly: the block is cached again at once
    stats = pu.memory_stats()
    assert stats["active.all.current"] == stats["allocation.all.current"]


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_out_of_memory_raises_with_figures_and_device_stays_usable():
    r = run_python(
        """
        import torch, torch_ext
        keep = torch.empty(8 << 20, dtype=torch.uint8, device="privateuseone")
        cached = torch.empty(16 << 20, dtype=torch.uint8, device="privateuseone"); del cached
        try:
            torch.empty(64 << 20, dtype=torch.uint8, device="privateuseone")
        except torch.OutOfMemoryError as e:
            print("OOM:", e)
        stats = torch.privateuseone.memory_stats()
        assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] == 1, stats
        # The cache was released on the way, and the device still works.
        y = torch.ones(1 << 20).to("privateuseone")
        assert y.sum().item() == 1 << 20
        assert keep.numel() == 8 << 20
        print("usable")
        """,
        # The host driver with a small memory limit: the allocator's OOM path is the
        # same for every driver (tests_gpu runs it on a GPU's real capacity).
        TORCH_EXT_HOST_MEMORY_LIMIT="32M",
        TORCH_EXT_FALLBACK="silent",
        TORCH_EXT_DRIVER="host",
    )
    assert r.returncode == 0, r.stderr
    assert "OOM: privateuseone out of memory. Tried to allocate 64.00 MiB" in r.stdout
    assert "total capacity of 32.00 MiB" in r.stdout
    assert "8.00 MiB is allocated by torch_ext" in r.stdout
    assert "usable" in r.stdout


def test_pinned_memory():
    if torch.cuda.is_available():
        # A torch built with CUDA, on a GPU, gives pin_memory=True to its own CUDA
        # allocator; our pinned memory is then asked for by device.
        x = torch.empty(100).pin_memory(DEV)
        assert x.is_pinned(DEV)
        assert not torch.empty(100).is_pinned(DEV)
    else:
        x = torch.empty(100, pin_memory=True)
        assert x.is_pinned()
        assert not torch.empty(100).is_pinned()
    assert torch.equal(x.fill_(2.0).to(DEV, non_blocking=True).cpu(), torch.full((100,), 2.0))


def test_stats_balance_when_a_larger_cached_block_is_reused():
    pu = torch.privateuseone
    torch.privateuseone.empty_cache()
    base = pu.memory_allocated()
    big = torch.empty(3000, device="privateuseone")  # a block of 12 KiB goes to the cache
    del big
    small = torch.empty(2000, device="privateuseone")  # 8 KiB request served by that block
    assert pu.memory_allocated() - base >= small.numel() * 4
    del small
    assert pu.memory_allocated() == base
