"""Errors a user reads: each names the problem (op, dtypes, devices, sizes, the setting that
would change it) and carries no internal traceback text (Python "At:" frames from a kernel,
C++ "Exception raised from" frames)."""

import pytest
import torch

import torch_ext
from helpers import DEV, run_python

INTERNAL = ("At:\n", "Traceback", "Exception raised from", "frame #", ".py(")


def assert_clean(message: str) -> None:
    for marker in INTERNAL:
        assert marker not in message, f"internal text {marker!r} in: {message}"


def test_unsupported_dtype_with_fallback_off_names_op_dtype_and_setting():
    x = torch.randn(4, dtype=torch.complex64).to(DEV)
    with torch_ext.fallback_mode("error"):
        with pytest.raises(NotImplementedError) as err:
            x.atan()  # add, mul, exp, log, sin, ... take complex tensors (ops/complex.py); atan not
    msg = str(err.value)
    assert "aten::atan" in msg and "torch.complex64" in msg
    assert "TORCH_EXT_FALLBACK" in msg
    assert_clean(msg)


@pytest.mark.parametrize("mode", ["warn", "silent"])
def test_unsupported_dtype_runs_on_cpu_when_fallback_allows(mode):
    x = torch.randn(4, 3, dtype=torch.complex64)
    d = x.to(DEV)
    torch_ext.reset_fallback_stats()
    with torch_ext.fallback_mode(mode):
        sines = d.atan()
        d.atan_()
        tri = torch.tril(d)
        z = torch.zeros(2, dtype=torch.complex128, device=DEV)
    assert sines.device.type == DEV and torch.equal(sines.cpu(), x.atan())
    assert torch.equal(d.cpu(), x.atan())
    assert torch.equal(tri.cpu(), torch.tril(x.atan()))
    assert z.device.type == DEV and torch.equal(z.cpu(), torch.zeros(2, dtype=torch.complex128))
    stats = torch_ext.fallback_stats()
    assert stats["aten::atan"] == 1 and stats["aten::atan_"] == 1
    assert stats["aten::tril"] == 1


def test_supported_dtypes_never_take_the_dtype_fallback():
    torch_ext.reset_fallback_stats()
    with torch_ext.fallback_mode("error"):
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int64):
            (torch.ones(3, dtype=dtype).to(DEV) * 2).cpu()
    assert torch_ext.fallback_stats() == {}


def test_kernel_errors_carry_no_python_traceback():
    """A Python exception inside a kernel surfaces with its type and message only."""
    x = torch.randn(5, 4).to(DEV)
    with pytest.raises(IndexError) as err:
        torch.index_select(x, 0, torch.tensor([0, 9]).to(DEV)).cpu()
        torch.privateuseone.synchronize()
    assert "9" in str(err.value)
    assert_clean(str(err.value))


def test_bad_device_index():
    with pytest.raises(RuntimeError) as err:
        torch.zeros(2).to(f"{DEV}:5")
    assert "Invalid device index 5" in str(err.value)
    assert_clean(str(err.value))
    with pytest.raises(RuntimeError) as err:
        torch.privateuseone.set_device(9)
    assert "9" in str(err.value)
    assert_clean(str(err.value))


@pytest.mark.two_devices
def test_cross_device_operands_name_both_devices():
    with pytest.raises(RuntimeError) as err:
        torch.add(torch.ones(3).to(DEV), torch.ones(3))
    msg = str(err.value)
    assert "privateuseone:0" in msg and "cpu" in msg
    assert_clean(msg)
    with pytest.raises(RuntimeError) as err:
        torch.mm(torch.ones(2, 2).to(DEV), torch.ones(2, 2).to(f"{DEV}:1"))
    assert "privateuseone:0" in str(err.value) and "privateuseone:1" in str(err.value)
    assert_clean(str(err.value))


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_out_of_memory_is_torch_oom_with_sizes_and_device_stays_usable():
    p = run_python(
        """
        import torch, torch_ext
        try:
            torch.empty(1 << 30, device="privateuseone")
        except torch.OutOfMemoryError as e:
            print("OOM:" + str(e).replace("\\n", " | "))
        x = torch.ones(4, device="privateuseone")
        print("after:", (x + 1).sum().item())
        """,
        TORCH_EXT_HOST_MEMORY_LIMIT=str(64 << 20),
        TORCH_EXT_DRIVER="host",
    )
    assert p.returncode == 0, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("OOM:"))
    assert "privateuseone" in line or "memory" in line.lower()
    assert_clean(line)
    assert "after: 8.0" in p.stdout
