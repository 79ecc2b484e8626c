"""Kernel-level tests of the shape family's roll, repeat_interleave and
tril/triu_indices kernels, called through the registry on `device` (CPU tensors
under Triton's interpreter by default; tests/ops/conftest.py) against PyTorch's
CPU result: results are exact, so every dtype compares bit for bit. (roll's
backward is roll by the negated shifts, which the first test covers.)"""

import pytest
import torch

from helpers import randn
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

ROLLS = [
    ((5, 6), [2], [1]),
    ((5, 6), [-7, 3], [0, 1]),
    ((3, 4, 5), [1, -2], [2, 0]),
    ((4, 5), [3], []),  # flattened, then reshaped back
    ((0, 3), [1], [1]),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
@pytest.mark.parametrize("shape,shifts,dims", ROLLS)
def test_roll(dtype, shape, shifts, dims, device):
    x = randn(shape, dtype, device)
    res = KERNELS["roll"](x, shifts, dims)
    assert_close(res, torch.roll(x.cpu(), shifts, dims))
    back = KERNELS["roll"](res, [-s for s in shifts], dims)  # the backward's formula
    assert_close(back, x.cpu())


def test_roll_noncontiguous(device):
    x = randn((6, 7), torch.float32, device, noncontig=True)
    assert not x.is_contiguous()
    assert_close(KERNELS["roll"](x, [2, -1], [0, 1]), torch.roll(x.cpu(), [2, -1], [0, 1]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("reps", [[2, 0, 3, 1], [0, 0], [], [5]])
def test_repeat_interleave(dtype, reps, device):
    r = torch.tensor(reps, dtype=dtype).to(device)
    res = KERNELS["repeat_interleave"](r)
    assert_close(res, torch.repeat_interleave(r.cpu()))
    total = sum(reps)
    assert_close(KERNELS["repeat_interleave"](r, total), torch.repeat_interleave(r.cpu()))


def test_repeat_interleave_errors(device):
    with pytest.raises(RuntimeError, match="can not be negative"):
        KERNELS["repeat_interleave"](torch.tensor([1, -1]).to(device))
    with pytest.raises(RuntimeError, match="does not match"):
        KERNELS["repeat_interleave"](torch.tensor([1, 2]).to(device), 4)


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("row,col,offset", [(4, 4, 0), (3, 6, 2), (6, 3, -2), (0, 3, 0), (3, 4, 9)])
def test_tri_indices(name, row, col, offset, device):
    res = KERNELS[name](row, col, offset, None, None, device)
    assert_close(res, getattr(torch, name)(row, col, offset))
    res32 = KERNELS[name](row, col, offset, torch.int32, None, device)
    assert_close(res32, getattr(torch, name)(row, col, offset, dtype=torch.int32))
