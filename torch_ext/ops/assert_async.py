"""torch._assert_async(t[, msg]): raises if the one-element tensor `t` is zero, without
waiting for the device, as CUDA's device-side assert; here the error is recorded in a
bounds-check flag slot (_bounds.py) and raised at a later checked op or synchronize()
on the cuda driver (at once on the host driver), and the device stays usable."""

import torch
import triton
import triton.language as tl

from . import _bounds
from ._declare import kernel
from ._launch import launch

_CPU_MESSAGE = "Expected Tensor with single nonzero value, but got zero"


@triton.jit
def _assert_kernel(x, flag):
    i = tl.arange(0, 2)
    v = tl.load(x + i, mask=i < 1, other=1)
    _bounds.record(flag, i, v == 0)


def _assert(t, message):
    if t.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if t.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    if t.is_complex():  # nonzero where either part is
        t = torch.view_as_real(t).abs().amax()
    flag = _bounds.new_flag(t.device, exc=RuntimeError, message=message)
    launch(_assert_kernel, (1,), t, flag)
    _bounds.check(flag)


@kernel()
def assert_async(self: torch.Tensor) -> None:
    _assert(self, _CPU_MESSAGE)


@kernel()
def assert_async_msg(self: torch.Tensor, assert_msg: str) -> None:
    _assert(self, (assert_msg or _CPU_MESSAGE).replace("{", "{{").replace("}", "}}"))
