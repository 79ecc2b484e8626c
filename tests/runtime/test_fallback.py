"""The CPU fallback: modes, statistics, and what it refuses (views,
factories, random ops, mixed devices)."""

import warnings

import pytest
import torch

import torch_ext

from helpers import DEV, run_python

# Test-only ops with nothing but a CPU kernel: they always reach the fallback.
_lib = torch.library.Library("torch_ext_test", "DEF")
_lib.define("twice(Tensor x) -> Tensor")
_lib.define("twice_(Tensor(a!) x) -> Tensor(a!)")
_lib.define("plus(Tensor x, Tensor y) -> Tensor")
_lib.define("halves(Tensor x) -> Tensor[]")
_lib.define("myview(Tensor(a) x) -> Tensor(a)")
_lib.define("noisy(Tensor x, Generator? generator=None) -> Tensor")
_lib.impl("twice", lambda x: x * 2, "CPU")
_lib.impl("twice_", lambda x: x.mul_(2), "CPU")
_lib.impl("plus", lambda x, y: x + y, "CPU")
_lib.impl("halves", lambda x: list(x.chunk(2)), "CPU")
_lib.impl("myview", lambda x: x.view(-1), "CPU")
_lib.impl("noisy", lambda x, generator=None: x + torch.rand(x.shape, generator=generator), "CPU")
ops = torch.ops.torch_ext_test


@pytest.fixture(autouse=True)
def clean_stats():
    torch_ext.reset_fallback_stats()
    yield
    torch_ext.reset_fallback_stats()


def test_session_default_is_error():
    assert torch_ext.fallback_mode.current() == "error"
    with pytest.raises(
        RuntimeError,
        match=r"torch_ext_test::twice has no privateuseone kernel.*TORCH_EXT_FALLBACK=error",
    ):
        ops.twice(torch.ones(2).to(DEV))


def test_silent_runs_on_cpu_and_counts():
    x = torch.arange(4.0).to(DEV)
    with torch_ext.fallback_mode("silent"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = ops.twice(x)
            ops.twice(x)
    assert y.device == x.device and torch.equal(y.cpu(), torch.arange(4.0) * 2)
    assert torch_ext.fallback_stats() == {"torch_ext_test::twice": 2}
    assert torch_ext.fallback_mode.current() == "error"  # restored


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_warn_once_per_op():
    # Warnings of ops called through torch.ops reach stderr, not always the
    # warnings module: count them there, in a fresh process in warn mode.
    r = run_python(
        """
        import torch, torch_ext
        lib = torch.library.Library("torch_ext_warn", "DEF")
        lib.define("twice(Tensor x) -> Tensor")
        lib.define("plus(Tensor x, Tensor y) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        lib.impl("plus", lambda x, y: x + y, "CPU")
        x = torch.ones(3).to("privateuseone")
        assert torch_ext.fallback_mode.current() == "warn"
        torch.ops.torch_ext_warn.twice(x)
        torch.ops.torch_ext_warn.twice(x)
        torch.ops.torch_ext_warn.plus(x, x)
        print(sorted(torch_ext.fallback_stats().items()))
        """,
        TORCH_EXT_FALLBACK="warn",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[('torch_ext_warn::plus', 1), ('torch_ext_warn::twice', 2)]"
    assert (
        r.stderr.count("torch_ext_warn::twice has no privateuseone kernel; running it on the CPU")
        == 1
    )
    assert (
        r.stderr.count("torch_ext_warn::plus has no privateuseone kernel; running it on the CPU")
        == 1
    )


@pytest.mark.two_devices
def test_inplace_and_list_results_come_back_to_the_device():
    x = torch.arange(4.0).to(f"{DEV}:1")
    with torch_ext.fallback_mode("silent"):
        r = ops.twice_(x)
        parts = ops.halves(x)
    assert r is x or r.data_ptr() == x.data_ptr()
    assert torch.equal(x.cpu(), torch.arange(4.0) * 2)
    assert [p.device for p in parts] == [x.device, x.device]
    assert torch.equal(parts[1].cpu(), torch.tensor([4.0, 6.0]))


def test_views_random_and_factories_never_fall_back():
    x = torch.ones(4).to(DEV)
    with torch_ext.fallback_mode("silent"):
        with pytest.raises(RuntimeError, match="torch_ext_test::myview.*as a view"):
            ops.myview(x)
        with pytest.raises(RuntimeError, match="torch_ext_test::noisy.*random op"):
            ops.noisy(x)
        if not torch._C._dispatch_has_kernel_for_dispatch_key("aten::tril_indices", "PrivateUse1"):
            with pytest.raises(RuntimeError, match="aten::tril_indices.*factory"):
                torch.tril_indices(3, 3, device=DEV)
    assert torch_ext.fallback_stats() == {}


@pytest.mark.two_devices
def test_mixing_cpu_and_device_tensors_names_both_devices():
    with torch_ext.fallback_mode("silent"):
        with pytest.raises(RuntimeError, match=r"privateuseone:0 and cpu"):
            ops.plus(torch.ones(3).to(DEV), torch.ones(3))
        with pytest.raises(RuntimeError, match=r"privateuseone:0 and privateuseone:1"):
            ops.plus(torch.ones(3).to(DEV), torch.ones(3).to(f"{DEV}:1"))


def test_zero_dim_cpu_tensor_is_a_scalar():
    with torch_ext.fallback_mode("silent"):
        y = ops.plus(torch.ones(3).to(DEV), torch.tensor(2.0))
    assert y.device.type == DEV and torch.equal(y.cpu(), torch.full((3,), 3.0))


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_mode_from_environment():
    r = run_python(
        """
        import torch, torch_ext
        print(torch_ext.fallback_mode.current())
        """,
        TORCH_EXT_FALLBACK="silent",
    )
    assert r.stdout.strip() == "silent", r.stderr
    r = run_python("import torch_ext", TORCH_EXT_FALLBACK="bogus")
    assert r.returncode != 0 and "TORCH_EXT_FALLBACK must be warn, silent or error" in r.stderr
    with pytest.raises(ValueError):
        torch_ext.fallback_mode("loud")
