"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the shape family
(masked_fill/cat/flip, tril/triu, arange, index_add/linspace/eye)."""

import pytest

import torch

from torch_ext.ops import index as I
from torch_ext.ops import shape

from helpers import assert_kernel_close as assert_close
from helpers import randn


@pytest.fixture(params=["int32", "int64"])
def cat_index(request, monkeypatch):
    """cat's coordinates in int32 (where offsets fit) and, forced, in int64."""
    if request.param == "int64":
        monkeypatch.setattr(shape, "INT32_LIMIT", 1)


def test_masked_fill_cat_flip(device, cat_index):
    x = randn((5, 6), torch.float32, device)
    m = (torch.randn(6) > 0).to(device)
    assert_close(I.masked_fill(x, m, -1.5), x.cpu().masked_fill(m.cpu(), -1.5))
    y = x.clone()
    I.masked_fill_(y, m, torch.tensor(3.0))
    assert_close(y, x.cpu().masked_fill(m.cpu(), 3.0))
    parts = [x, x[:, :2], randn((5, 0), torch.float32, device)]
    assert_close(shape.cat(parts, 1), torch.cat([p.cpu() for p in parts], 1))
    assert_close(shape.cat([x, x.t().contiguous().t()], 0), torch.cat([x.cpu(), x.cpu()], 0))
    assert_close(
        shape.cat([x.to(torch.float16), x.to(torch.int32)], 0),
        torch.cat([x.cpu().half(), x.cpu().int()], 0),
    )
    z = randn((3, 4, 5), torch.int32, device).transpose(0, 2)
    for dims in ([0], [1, 2], [0, 1, 2], [-1]):
        assert_close(shape.flip(z, dims), torch.flip(z.cpu(), dims))


@pytest.mark.parametrize("diagonal", [0, 1, -2, 10])
def test_tril_triu(diagonal, device):
    x = randn((2, 7, 5), torch.float32, device)
    out = torch.empty_like(x)
    shape.tril_out(x, diagonal, out)
    assert_close(out, torch.tril(x.cpu(), diagonal))
    shape.triu_out(x.transpose(1, 2), diagonal, out.transpose(1, 2))
    assert_close(out.transpose(1, 2), torch.triu(x.cpu().transpose(1, 2), diagonal))


def test_arange(device):
    for start, end, step, dtype in [
        (0, 10, 1, torch.int64),
        (1.5, 5, 0.5, torch.float32),
        (10, -3, -3, torch.int32),
        (0, 1, 0.1, torch.float64),
        (-2.123456789012345, 1.0000000001, 0.3, torch.float64),  # beyond fp32's 24 bits
        (2**40, 2**40 + 7, 1, torch.int64),
    ]:
        ref = torch.arange(start, end, step, dtype=dtype)
        out = torch.empty(ref.shape, dtype=dtype, device=device)
        shape.arange_out(start, end, step, out)
        # float64 to the last bits (a fused multiply-add may round once less): Triton
        # would pass the Python floats as fp32 (f64_words)
        torch.testing.assert_close(out.cpu(), ref, rtol=1e-15, atol=1e-15)


def test_index_add_linspace_eye(device):
    from torch_ext.ops import index as I2

    x = randn((4, 6, 3), torch.float32, device)
    src = randn((4, 5, 3), torch.float32, device)
    idx = torch.tensor([0, 5, 5, 2, 1])
    out = torch.empty_like(x)
    I2.index_add_out(x, 1, idx.to(device), src, 0.5, out)
    assert_close(out, x.cpu().index_add(1, idx, src.cpu(), alpha=0.5), atol=1e-5)
    with pytest.raises(IndexError, match="index -1 is out of bounds"):  # as on CPU: no wrapping
        I2.index_add_out(x, 1, torch.tensor([0, 5, 5, 2, -1]).to(device), src, 0.5, out)
        if out.device.type == "privateuseone":  # the cuda driver reports at the next sync
            torch.privateuseone.synchronize()
    for start, end, steps, dtype in [
        (0, 1, 11, torch.float32),
        (-3, 7, 1, torch.float64),
        (2, -2, 7, torch.float64),
        (-2.123456789012345, 1.0000000001, 7, torch.float64),
        (0, 10, 6, torch.int64),
    ]:
        ref = torch.linspace(start, end, steps, dtype=dtype)
        out = torch.empty(ref.shape, dtype=dtype, device=device)
        shape.linspace_out(start, end, steps, out)
        if dtype == torch.float64:  # endpoints exactly (an histogram's outer edges)
            torch.testing.assert_close(out.cpu()[[0, -1]], ref[[0, -1]], rtol=0, atol=0)
            torch.testing.assert_close(out.cpu(), ref, rtol=1e-15, atol=1e-15)
        else:
            assert_close(out, ref, atol=1e-6 if dtype.is_floating_point else None)
    out = torch.empty(3, 5, device=device)
    shape.eye_out(3, 5, out)
    assert_close(out, torch.eye(3, 5))
