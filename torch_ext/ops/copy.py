"""Copy, cast and fill (convention (1)).

copy: copy_stub(iter, non_blocking) -- device-to-device copies between any
  strides and dtypes (the value is converted to the destination's dtype).
fill: fill_stub(iter, value) -- the iterator has one output and no inputs.
"""

import torch
import triton
import triton.language as tl  # noqa: F401  (the interpreter needs tl in scope)

from ._pointwise import Pointwise
from ._declare import Scalar, kernel


@triton.jit
def _identity(x):
    return x


@triton.jit
def _value(v):
    return v


copy = Pointwise(_identity, num_inputs=1, cast=[False], name="copy")
_fill = Pointwise(_value, num_inputs=0, name="fill")


@kernel("copy", shapes=True)  # Pointwise iterator forms: sizes traced there
def copy_kernel(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype | None = None,
    non_blocking: bool = False,
) -> None:
    copy.iter(outs, ins, outs[0].dtype)


@kernel("fill", shapes=True)
def fill_kernel(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    value: Scalar,
) -> None:
    dtype = outs[0].dtype
    if dtype == torch.bool:
        value = bool(value)
    elif not dtype.is_floating_point:
        value = int(value)
    else:
        value = float(value)
    _fill.iter(outs, (), dtype, value)


def fill_(self, value):
    """Functional helper: self.fill_(value) on the device."""
    if isinstance(value, torch.Tensor):
        value = value.item()
    fill_kernel((self,), (), self.dtype, value)
    return self


def copy_(dst, src):
    """Functional helper: dst.copy_(src) with broadcasting, same device."""
    copy_kernel((dst,), (src.expand(dst.shape),))
    return dst


def zero_(self):
    """zero_(self) (plain, convention (3))."""
    return fill_(self, 0)
