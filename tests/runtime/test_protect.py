"""TORCH_EXT_HOST_PROTECT=1: device memory is unreadable from host code,
except through the runtime. A mode of the host driver: these children run on
it whichever driver the test run uses."""

import signal

import pytest

from helpers import run_python


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_runtime_paths_work_under_protection():
    r = run_python(
        """
        import torch, torch_ext
        assert not torch_ext._C._driver_host_addressable()
        x = torch.arange(10.0)
        d = x.to("privateuseone")
        assert torch.equal(d.cpu(), x)
        assert torch.equal(d[::2].cpu(), x[::2])
        assert torch.equal(d.to(torch.int32).cpu(), x.to(torch.int32))
        assert d[3].item() == 3.0
        d.resize_(100)
        assert torch.equal(d[:10].cpu(), x)
        try:
            torch_ext._C._host_alias(d)
            raise SystemExit("host alias allowed")
        except RuntimeError as e:
            assert "not host-addressable" in str(e)
        print("ok")
        """,
        TORCH_EXT_HOST_PROTECT="1",
        TORCH_EXT_FALLBACK="silent",
        TORCH_EXT_DRIVER="host",
    )
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_stray_host_read_crashes():
    r = run_python(
        """
        import ctypes, torch, torch_ext
        d = torch.ones(4).to("privateuseone")
        print(ctypes.c_float.from_address(d.data_ptr()).value)
        """,
        TORCH_EXT_HOST_PROTECT="1",
        TORCH_EXT_DRIVER="host",
    )
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stdout, r.stderr)


def test_same_read_succeeds_unprotected():
    r = run_python(
        """
        import ctypes, torch, torch_ext
        d = torch.ones(4).to("privateuseone")
        print(ctypes.c_float.from_address(d.data_ptr()).value)
        """,
        TORCH_EXT_DRIVER="host",
    )
    assert r.returncode == 0 and r.stdout.strip() == "1.0", r.stderr
