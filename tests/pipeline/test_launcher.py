"""How C++ reaches Triton: the tier-1 launcher and the kernel registry."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import torch_ext  # noqa: F401
from torch_ext import _registry

from helpers import DEV

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_python_error_surfaces_with_its_type_and_message():
    """The kernel's IndexError reaches the user as IndexError naming the op and the index,
    without pybind's "At:" Python traceback (on a GPU the bound check is reported at the
    next synchronisation, "reported asynchronously")."""
    d = torch.randn(5, 4).to(DEV)
    with pytest.raises(IndexError, match=r"index_select.*index 9") as err:
        torch.index_select(d, 0, torch.tensor([0, 9]).to(DEV)).cpu()
        torch.privateuseone.synchronize()  # a GPU reports the bound check here
    assert "At:" not in str(err.value)
    # the device is still usable
    x = torch.randn(4, 4)
    torch.testing.assert_close(torch.tril(x.to(DEV)).cpu(), torch.tril(x))


def test_unknown_kernel_name_is_a_clear_error():
    with pytest.raises(LookupError, match="no Triton kernel named 'no_such_kernel'"):
        _registry.resolve("no_such_kernel")


def test_calls_from_other_threads_take_the_gil_themselves():
    """Autograd runs backward on its own threads; kernels called there must work."""
    errors, results = [], []

    def work():
        try:
            x = torch.randn(64, 32)
            results.append(
                torch.allclose((x.to(DEV).softmax(-1) * 2).cpu(), x.softmax(-1) * 2, atol=1e-6)
            )
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [True] * 4
    w = torch.randn(8, 8, requires_grad=True)
    wd = w.detach().to(DEV).requires_grad_()
    (wd.tanh() * wd).sum().backward()
    (w.tanh() * w).sum().backward()
    torch.testing.assert_close(wd.grad.cpu(), w.grad)


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_importing_triton_first_still_works():
    code = textwrap.dedent("""
        import triton, triton.language as tl   # before torch_ext
        import torch, torch_ext
        x = torch.randn(5, 5)
        assert torch.allclose((x.to("privateuseone") * 3 + 1).cpu(), x * 3 + 1)
        print("ok")
    """)
    env = dict(os.environ, TORCH_EXT_FALLBACK="error")
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_codegen_list_on_the_real_manifest():
    r = subprocess.run(
        [sys.executable, "-m", "codegen", "--list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "LegacyMeta" in r.stdout and "Customized" not in r.stdout.split("entries:")[-1]
    assert (
        "lerp.Scalar_out" in r.stdout
        and "fills lerp_kernel_scalar_weight <- lerp_scalar" in r.stdout
    )
    assert "triu.out" in r.stdout and "hand-written C++" in r.stdout
