"""ops/_tune.py on a GPU: a candidate's timing is the device's time, not the host's.
The timed launches queue behind a spin (_hold_stream), so a `run` whose Python is slow
(here: a 0.2 ms sleep before each launch, five launches within the 2 ms spin) still
measures its kernel alone. (With a 1 ms sleep the host outran the spin and the test
measured 0.84 ms, H200, session 18.)"""

import time

import torch

from torch_ext.ops import _tune

DEV = torch.device("privateuseone", 0)


def test_timing_excludes_the_host():
    x = torch.randn(1 << 16, device=DEV)
    y = torch.empty_like(x)

    def run(cfg):
        time.sleep(2e-4)  # a host far slower than the kernel
        torch.mul(x, 2.0, out=y)

    ms = _tune._time(run, (0,), DEV)
    # a 256 KB multiply runs in microseconds; timed with the host it takes >= 0.2 ms
    assert 0 < ms < 0.1, ms
    torch.testing.assert_close(y.cpu(), 2 * x.cpu())


def test_the_spin_holds_the_stream_for_its_time():
    start = torch.Event(device=DEV, enable_timing=True)
    end = torch.Event(device=DEV, enable_timing=True)
    start.record()
    _tune._hold_stream(DEV)
    end.record()
    end.synchronize()
    assert 1.5 < start.elapsed_time(end) < 50, start.elapsed_time(end)
