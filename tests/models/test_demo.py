"""The README's demo, and scripts run as users run them: in a fresh process."""

import os
import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def _run(args, timeout=240):
    env = dict(os.environ, TORCH_EXT_FALLBACK="error")
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_demo_runs_natively():
    proc = _run(["-m", "torch_ext.demo"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "fell back to CPU: 0 ops" in out, out[-4000:]
    assert out.count("MATCHES CPU") == 3, out[-4000:]  # decoder, CNN, MLP


def test_script_ending_in_device_backward_exits_cleanly():
    # The autograd worker thread of privateuseone used to release its last
    # graph task (holding a Python object) during interpreter finalization:
    # "terminate called without an active exception", exit code 134.
    script = (
        "import torch, torch_ext\n"
        "x = torch.randn(3, device='privateuseone', requires_grad=True)\n"
        "x.clone().sum().backward()\n"
    )
    for _ in range(3):
        proc = _run(["-c", script], timeout=60)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "terminate called" not in proc.stderr


def test_exit_drain_launches_no_kernel():
    """The exit-time backward that lets the device's autograd thread drop its last task
    launches (and so compiles) no kernel."""
    import torch_ext
    from torch_ext.ops import _launch

    x = torch.randn(3, device="privateuseone", requires_grad=True)
    x.clone().sum().backward()
    before = _launch.launches()
    torch_ext._drain_autograd_device_thread()
    assert _launch.launches() == before
