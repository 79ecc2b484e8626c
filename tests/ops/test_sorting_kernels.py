"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the sorting
family (sort/topk, long rows)."""

import math

import pytest

import torch

from torch_ext.ops import sort

from helpers import randn
from helpers import assert_kernel_close as assert_close


def _check_sort_and_topk(x, k):
    """Stable sort along every dim, both orders, and topk(k) along dim 1,
    against the CPU."""
    for dim in range(x.dim()):
        for desc in (False, True):
            v, i = sort.sort(x, dim, desc)
            rv, ri = torch.sort(x.cpu(), stable=True, dim=dim, descending=desc)
            assert_close(v, rv)
            assert_close(i, ri)
    v, i = sort.topk(x, k, 1)
    rv, _ = torch.topk(x.cpu(), k, 1)
    assert_close(v, rv)
    assert_close(torch.gather(x.cpu(), 1, i.cpu()), rv)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_sort_topk(dtype, device):
    x = randn((4, 37, 3), dtype, "cpu", -5, 5)
    if dtype.is_floating_point:
        x = x.round()  # ties exercise stability
        x[0, 3, 0] = math.nan
    x = x.to(device)
    _check_sort_and_topk(x, 5)
    v, i = sort.topk(x, 3, 1, largest=False)
    assert_close(v, torch.topk(x.cpu(), 3, 1, largest=False).values)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32])
def test_sort_long_rows_merge(dtype, device, monkeypatch):
    # Rows longer than MERGE_FROM take the merge sort (forced here from 40
    # elements, so that odd lengths leave unpaired runs): stable, NaN last
    # (first when descending), along any dim.
    monkeypatch.setattr(sort, "MERGE_FROM", 40)
    x = randn((3, 141, 2), dtype, "cpu", -9, 9)
    if dtype.is_floating_point:
        x = x.round()
        x[1, ::17, 0] = math.nan
    _check_sort_and_topk(x.to(device), 50)


@pytest.mark.parametrize("budget", [0, 3 * 301 * 301], ids=["merge", "rank"])
def test_sort_long_rows_rank_budget(budget, device, monkeypatch):
    """Rows past MERGE_FROM stay the one-launch rank sort while rows * length^2 fits the
    driver's rank_sort_budget (the token indices of embedding's backward), merge-sorted
    past it: the same stable result (ties keep their order) either way."""
    from helpers import force_spec, spy_launches

    monkeypatch.setattr(sort, "MERGE_FROM", 40)
    force_spec(monkeypatch, sort, rank_sort_budget=budget)
    calls = spy_launches(monkeypatch, sort)
    x = torch.randint(0, 20, (3, 301))  # many ties
    v, i = sort.sort(x.to(device), 1, stable=True)
    ref = torch.sort(x, dim=1, stable=True)
    assert torch.equal(v.cpu(), ref.values) and torch.equal(i.cpu(), ref.indices)
    kernels = {k for k, _ in calls if k in (sort._rank_sort_kernel, sort._merge_pass_kernel)}
    assert kernels == {sort._rank_sort_kernel if budget else sort._merge_pass_kernel}


@pytest.mark.parametrize("largest", [True, False])
def test_topk_long_rows(largest, device):
    x = randn((3, 5000), torch.float32, "cpu").round(decimals=1)  # ties across chunks
    x[1, 4321] = math.nan
    v, i = sort.topk(x.to(device).t(), 10, 0, largest)
    rv = torch.topk(x.t(), 10, 0, largest)
    assert_close(v, rv.values)
    assert_close(torch.gather(x.t(), 0, i.cpu()), rv.values)
    sv, si = torch.sort(x.t(), stable=True, dim=0, descending=largest)
    assert_close(i, si[:10])
