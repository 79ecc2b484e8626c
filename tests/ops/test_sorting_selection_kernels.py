"""Kernel-level tests of the sorting family's selection, search, count and
unique kernels (median, kthvalue, mode, cummax, searchsorted, bincount,
unique), called through the registry on `device` (CPU tensors under Triton's
interpreter by default; tests/ops/conftest.py) against PyTorch on CPU. Where
ties make the index a choice, the index is checked to point at the value."""

import pytest
import torch

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

F32, BF16, I64 = torch.float32, torch.bfloat16, torch.int64


def _points_at(x, dim, values, idx, keepdim):
    v = to_ref(x).gather(dim, idx.cpu() if keepdim else idx.cpu().unsqueeze(dim))
    assert torch.equal(v if keepdim else v.squeeze(dim), to_ref(values))


@pytest.mark.parametrize("dtype", [F32, BF16, I64])
@pytest.mark.parametrize("shape,dim", [((5, 9), 1), ((6, 3, 4), 0), ((1, 7), -1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_median_kthvalue_dim(dtype, shape, dim, keepdim, device):
    x = randn(shape, dtype, device, noncontig=True)
    ref_v, _ = torch.median(x.cpu(), dim, keepdim)
    vals = torch.empty(ref_v.shape, dtype=dtype, device=device)
    idx = torch.empty(ref_v.shape, dtype=I64, device=device)
    KERNELS["median_dim"](x, dim, keepdim, vals, idx)
    assert_close(vals, ref_v)
    _points_at(x, dim, vals, idx, keepdim)
    k = min(2, x.shape[dim])
    ref_k, _ = torch.kthvalue(x.cpu(), k, dim, keepdim)
    KERNELS["kthvalue"](x, k, dim, keepdim, vals, idx)
    assert_close(vals, ref_k)
    _points_at(x, dim, vals, idx, keepdim)


def test_mode_and_cummax(device):
    x = torch.randint(0, 4, (5, 11)).to(device)
    vals, idx = KERNELS["mode"](x, 1, False)
    ref_v, _ = torch.mode(x.cpu(), 1)
    assert torch.equal(vals.cpu(), ref_v)
    _points_at(x, 1, vals, idx, False)
    y = randn((4, 9), F32, device)
    v, i = torch.empty_like(y), torch.empty(y.shape, dtype=I64, device=device)
    KERNELS["cummax_helper"](y, v, i, 1)
    rv, ri = torch.cummax(y.cpu(), 1)
    assert_close(v, rv)
    assert torch.equal(i.cpu(), ri)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", [F32, I64])
def test_searchsorted(right, dtype, device):
    seq = torch.sort(randn((3, 8), dtype, device, low=-5, high=5), dim=1).values
    vals = randn((3, 5), dtype, device, low=-6, high=6)
    vals[0, :3] = seq[0, :3]  # exact hits: left and right differ
    out = KERNELS["searchsorted"](seq, vals, False, right)
    assert torch.equal(out.cpu(), torch.searchsorted(seq.cpu(), vals.cpu(), right=right))


def test_bincount_and_unique(device):
    x = torch.tensor([3, 0, 3, 7, 1, 3, 0], dtype=I64)
    w = torch.rand(7, dtype=torch.float64)
    assert torch.equal(
        KERNELS["bincount"](x.to(device), None, 10).cpu(), torch.bincount(x, None, 10)
    )
    assert_close(KERNELS["bincount"](x.to(device), w.to(device), 0), torch.bincount(x, w))
    out, inv, counts = KERNELS["unique2"](x.to(device), True, True, True)
    ref = torch._unique2(x, True, True, True)
    for a, b in zip((out, inv, counts), ref):
        assert torch.equal(a.cpu(), b)
    empty = KERNELS["bincount"](torch.empty(0, dtype=I64, device=device), None, 0)
    assert empty.numel() == 0 and empty.dtype == I64
