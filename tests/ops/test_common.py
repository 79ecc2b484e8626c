"""ops/_common.py: the TF32 setting float32 matrix products and convolutions follow.

PyTorch has two APIs for it: the legacy torch.set_float32_matmul_precision and
torch.backends.cudnn.allow_tf32, and the fp32_precision settings (per op, per backend,
generic). Once a user mixes them the legacy getters raise; the device must keep working
and follow the setting that CUDA's own kernels read (the op's resolved fp32_precision),
also for calls replayed from C++ (the plan key holds it)."""

import pytest
import torch
import torch.nn.functional as F

from torch_ext.ops import _common, conv_igemm, conv_igemm_flat, matmul

DEVICE = "privateuseone"


def _set(backend, op, precision):
    """torch.backends.<backend>[.<op>].fp32_precision = precision, through the setter those
    properties call (torch.testing's common_utils, which other test files import, freezes
    torch.backends' properties with disable_global_flags)."""
    torch._C._set_fp32_precision_setter(backend, op, precision)


def _legacy_cudnn(allow):
    """torch.backends.cudnn.allow_tf32 = allow, through its setter (as _set)."""
    torch._C._set_cudnn_allow_tf32(allow)


@pytest.fixture
def precision_state():
    """Restores the clean state tests/conftest.py sets (legacy flags, nothing else),
    whether or not the test failed half-way."""
    mm = torch._C._get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(mm)  # sets cuda.matmul too
    _legacy_cudnn(False)  # tests/conftest.py's; sets cuda.conv and cuda.rnn
    for backend in ("cuda", "generic"):
        _set(backend, "all", "none")


def _spy(monkeypatch, *modules):
    """The PRECISION each kernel launch of `modules` passes."""
    seen = []
    for module in modules:
        real = module.launch

        def spy(kernel, grid, *args, _real=real, **kw):
            seen.append(kw.get("PRECISION"))
            return _real(kernel, grid, *args, **kw)

        monkeypatch.setattr(module, "launch", spy)
    return seen


def test_tf32_allowed_follows_both_apis(precision_state):
    torch.set_float32_matmul_precision("highest")
    assert not _common.tf32_allowed("matmul")
    torch.set_float32_matmul_precision("high")
    assert _common.tf32_allowed("matmul")
    _set("cuda", "matmul", "ieee")  # now mixed: "high" and ieee
    assert not _common.tf32_allowed("matmul")
    _legacy_cudnn(True)
    assert _common.tf32_allowed("conv")
    _set("cuda", "conv", "ieee")  # conv and rnn now differ
    with pytest.raises(RuntimeError, match="mix of the legacy and new APIs"):
        torch._C._get_cudnn_allow_tf32()  # what the device read before: it raised
    assert not _common.tf32_allowed("conv")
    _set("cuda", "conv", "none")  # inherit: cudnn's, then generic
    _set("generic", "all", "tf32")
    assert _common.tf32_allowed("conv")
    _set("generic", "all", "ieee")
    assert not _common.tf32_allowed("conv")


def test_mixed_apis_leave_every_op_working(precision_state):
    a = torch.randn(64, device=DEVICE)
    (a + 1).cpu()  # recorded
    _set("cuda", "conv", "ieee")
    _set("cuda", "matmul", "tf32")  # legacy says "highest"
    for _ in range(2):  # keyed, recorded, replayed under the mixed state
        torch.testing.assert_close((a + 1).cpu(), a.cpu() + 1)


def test_matmul_follows_fp32_precision_when_replayed(precision_state, monkeypatch):
    seen = _spy(monkeypatch, matmul)
    a = torch.randn(40, 24, device=DEVICE)
    b = torch.randn(24, 56, device=DEVICE)
    _set("cuda", "matmul", "ieee")
    for _ in range(2):  # recorded, then replayed (no Python)
        torch.mm(a, b)
    assert seen == ["ieee"], seen
    _set("cuda", "matmul", "tf32")
    for _ in range(2):
        out = torch.mm(a, b)
    assert seen == ["ieee", "tf32"], seen
    _set("cuda", "matmul", "ieee")
    torch.mm(a, b)  # the first plan again
    assert seen == ["ieee", "tf32"], seen
    torch.testing.assert_close(out.cpu(), a.cpu() @ b.cpu(), atol=1e-2, rtol=1e-2)


def test_conv_follows_fp32_precision_when_replayed(precision_state, monkeypatch):
    seen = _spy(monkeypatch, conv_igemm, conv_igemm_flat)  # the gather, the small maps'
    x = torch.randn(2, 8, 6, 6, device=DEVICE)
    w = torch.randn(8, 8, 3, 3, device=DEVICE)
    _set("cuda", "conv", "ieee")
    for _ in range(2):
        F.conv2d(x, w, padding=1)
    assert seen and set(seen) == {"ieee"}, seen
    n = len(seen)
    _set("cuda", "conv", "tf32")
    for _ in range(2):
        out = F.conv2d(x, w, padding=1)
    assert set(seen[n:]) == {"tf32"} and len(seen) == 2 * n, seen
    ref = F.conv2d(x.cpu(), w.cpu(), padding=1)
    torch.testing.assert_close(out.cpu(), ref, atol=2e-2, rtol=2e-2)
