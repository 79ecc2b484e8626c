"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the softmax
family (softmax, log_softmax, forward and backward)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, assert_close, check, grads, rand


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_softmax_backward(dtype):
    x = rand((6, 33), dtype, -4, 4)
    grads(lambda t: torch.softmax(t, -1), x, dtype=dtype, reduce=33)
    grads(lambda t: torch.log_softmax(t, 0), x, dtype=dtype, reduce=6)
    grads(lambda t: torch.softmax(t, 1), rand((2, 5, 3), dtype), dtype=dtype, reduce=5)


def test_softmax_norm_forward():
    x = rand((7, 13), F32, noncontig=True)
    for fn in (torch.softmax, torch.log_softmax):
        check(fn, x, 1, reduce=13)
        check(fn, x, 0, reduce=7)
        check(fn, x.half(), 1, reduce=13)
        check(fn, x.bfloat16(), 1, dtype=BF16, reduce=13)
        check(lambda t: fn(t, 1, dtype=F32), x.half(), reduce=13)
        same = fn(x, 1)
        out = torch.empty_like(same).to(DEV)
        aten = torch.ops.aten._softmax if fn is torch.softmax else torch.ops.aten._log_softmax
        aten.out(x.to(DEV), 1, False, out=out)
        assert_close(out, fn(x.double(), 1), reduce=13)
    check(F.layer_norm, rand((3, 1000), F32), (1000,), reduce=1000)
    check(F.group_norm, rand((2, 6, 37), F32), 3, reduce=74)
    check(F.rms_norm, rand((4, 33), F32), (33,), rand((33,), F32), reduce=33)
