"""Kernel-level tests of the indexing family's embedding_bag (sum, mean, max;
per-sample weights, include_last_offset, padding_idx, empty bags; forward and
dense backward), called through the registry on `device` (CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) against PyTorch on CPU."""

import pytest
import torch
import torch.nn.functional as F

from helpers import randn, to_ref
from helpers import assert_kernel_close as assert_close
from torch_ext.ops import KERNELS

F32, F64 = torch.float32, torch.float64
MODES = {0: "sum", 1: "mean", 2: "max"}


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("include_last,padding_idx", [(False, -1), (True, 2)])
def test_embedding_bag_forward_backward(mode, dtype, include_last, padding_idx, device):
    weight = randn((10, 5), dtype, device)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2])
    offsets = torch.tensor([0, 3, 3, 6] + ([9] if include_last else []))  # bag 1 is empty
    psw = randn((9,), dtype, device) if mode == 0 else None
    out, offset2bag, bag_size, max_idx = KERNELS["embedding_bag"](
        weight,
        idx.to(device),
        offsets.to(device),
        False,
        mode,
        False,
        psw,
        include_last,
        padding_idx,
    )
    rw = to_ref(weight).requires_grad_()
    pad = None if padding_idx < 0 else padding_idx
    rout = F.embedding_bag(
        idx, rw, offsets, mode=MODES[mode], per_sample_weights=to_ref(psw),
        include_last_offset=include_last, padding_idx=pad,
    )  # fmt: skip
    assert_close(out, rout.detach(), dtype, reduce_dim=4)
    g = randn(out.shape, dtype, device)
    rout.backward(to_ref(g))
    gw = KERNELS["embedding_bag_dense_backward"](
        g, idx.to(device), offset2bag, bag_size, max_idx, 10, False, mode, psw, padding_idx
    )
    assert_close(gw, rw.grad, dtype, reduce_dim=4)
