"""Statistics over dimensions: var/std (+ mean), vector norms, logsumexp, nansum,
renorm's scale factor."""

import triton
import triton.language as tl
import math
import torch

from ._pointwise import pointwise
from .copy import copy_kernel
from ._declare import Scalar, kernel
from .reduction import (
    ABS_MAX,
    ABS_MIN,
    ABS_SUM,
    EXP_SUM,
    NONZERO,
    POST_LOG_ADD,
    POST_NONE,
    POST_ROOT,
    POST_SQRT,
    POW_SUM,
    SQDEV,
    SQ_SUM,
    _cast,
    normalize_dims,
    reduce_into,
    run_reduce,
)
from ._common import sized_like, acc_dtype, as_arb
from .reduction import MAX, SUM


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def renorm_scale_factor(norm, maxnorm):
    # PyTorch's factor: sub-tensors whose norm exceeds maxnorm scale down to it.
    return tl.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(norm.dtype)


@kernel()
def nansum(
    self: torch.Tensor,
    dim: list[int] | None = None,
    keepdim: bool = False,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    x = torch.where(torch.isnan(self), 0, self) if self.is_floating_point() else self
    return torch.sum(x, dim, keepdim, dtype=dtype)


@kernel()
def nansum_out(
    self: torch.Tensor,
    dim: list[int] | None,
    keepdim: bool,
    dtype: torch.dtype | None,
    out: torch.Tensor,
) -> torch.Tensor:
    return sized_like(out, nansum(self, dim, keepdim, dtype or out.dtype))


def _correction(correction, unbiased=True):
    if correction is None:
        return 1.0 if unbiased else 0.0
    return float(correction)


def _var_into(self, dim, correction, out_var, out_mean=None, take_sqrt=False):
    dims = normalize_dims(dim, self.dim())
    xv, A, R, B = as_arb(self, dims)
    acc = acc_dtype(self.dtype)
    mean = torch.empty((A * B,), dtype=acc, device=self.device)
    run_reduce(xv, A, R, B, mean, SUM, 0, (1.0 / R) if R else math.nan)
    denom = R - correction
    scale = 1.0 / denom if denom > 0 else math.inf
    run_reduce(
        xv, A, R, B, out_var, SQDEV, 0, scale, post=POST_SQRT if take_sqrt else POST_NONE, aux=mean
    )
    if out_mean is not None:
        copy_kernel((out_mean,), (mean.view(out_mean.shape),))


@kernel("var")
def var_correction(
    self: torch.Tensor,
    dim: list[int] | None = None,
    correction: Scalar | None = None,
    keepdim: bool = False,
) -> torch.Tensor:
    """var.correction (plain): returns the result."""
    return _var_fn(self, dim, correction, keepdim, False)


@kernel("std")
def std_correction(
    self: torch.Tensor,
    dim: list[int] | None = None,
    correction: Scalar | None = None,
    keepdim: bool = False,
) -> torch.Tensor:
    return _var_fn(self, dim, correction, keepdim, True)


def _reduced_shape(x, dim, keepdim):
    dims = normalize_dims(dim, x.dim())
    if keepdim:
        return [1 if d in dims else s for d, s in enumerate(x.shape)]
    return [s for d, s in enumerate(x.shape) if d not in dims]


def _var_fn(self, dim, correction, keepdim, take_sqrt):
    out = torch.empty(_reduced_shape(self, dim, keepdim), dtype=self.dtype, device=self.device)
    _var_into(self, dim, _correction(correction), out, take_sqrt=take_sqrt)
    return out


@kernel("var_out")
def var_correction_out(
    self: torch.Tensor,
    dim: list[int] | None,
    correction: Scalar | None,
    keepdim: bool,
    out: torch.Tensor,
) -> None:
    out.resize_(_reduced_shape(self, dim, keepdim))  # a plain out= op sizes its own out
    _var_into(self, dim, _correction(correction), out)


@kernel("std_out")
def std_correction_out(
    self: torch.Tensor,
    dim: list[int] | None,
    correction: Scalar | None,
    keepdim: bool,
    out: torch.Tensor,
) -> None:
    out.resize_(_reduced_shape(self, dim, keepdim))
    _var_into(self, dim, _correction(correction), out, take_sqrt=True)


@kernel("var_mean")
def var_mean_correction(
    self: torch.Tensor,
    dim: list[int] | None = None,
    correction: Scalar | None = None,
    keepdim: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """var_mean.correction (plain): returns (var, mean)."""
    shape = _reduced_shape(self, dim, keepdim)
    var = torch.empty(shape, dtype=self.dtype, device=self.device)
    mean = torch.empty(shape, dtype=self.dtype, device=self.device)
    _var_into(self, dim, _correction(correction), var, mean)
    return var, mean


@kernel("std_mean")
def std_mean_correction(
    self: torch.Tensor,
    dim: list[int] | None = None,
    correction: Scalar | None = None,
    keepdim: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    shape = _reduced_shape(self, dim, keepdim)
    std = torch.empty(shape, dtype=self.dtype, device=self.device)
    mean = torch.empty(shape, dtype=self.dtype, device=self.device)
    _var_into(self, dim, _correction(correction), std, mean, take_sqrt=True)
    return std, mean


@kernel("linalg_vector_norm")
def linalg_vector_norm_out(
    self: torch.Tensor,
    ord: Scalar,
    dim: list[int] | None,
    keepdim: bool,
    dtype: torch.dtype | None,
    out: torch.Tensor,
) -> None:
    """linalg_vector_norm.out impl: (self, ord, dim?, keepdim, dtype?, out)."""
    x = self if dtype is None or dtype == self.dtype else _cast(self, dtype)
    ord = float(ord)
    if ord == 2:
        reduce_into(x, dim, out, SQ_SUM, post=POST_SQRT)
    elif ord == 1:
        reduce_into(x, dim, out, ABS_SUM)
    elif ord == math.inf:
        reduce_into(x, dim, out, ABS_MAX)
    elif ord == -math.inf:
        reduce_into(x, dim, out, ABS_MIN)
    elif ord == 0:
        reduce_into(x, dim, out, NONZERO)
    else:
        reduce_into(x, dim, out, POW_SUM, post=POST_ROOT, p=ord)


@kernel("norm")
def norm_out(
    self: torch.Tensor,
    p: Scalar | None,
    dim: list[int],
    keepdim: bool,
    out: torch.Tensor,
    dtype: torch.dtype | None = None,
) -> None:
    """norm.out / norm.dtype_out impls: (self, p?, dim, keepdim[, dtype], out)."""
    linalg_vector_norm_out(self, 2.0 if p is None else p, dim, keepdim, dtype, out)


@kernel("norm_dtype")
def norm_dtype_out(
    self: torch.Tensor,
    p: Scalar | None,
    dim: list[int],
    keepdim: bool,
    dtype: torch.dtype,
    out: torch.Tensor,
) -> None:
    linalg_vector_norm_out(self, 2.0 if p is None else p, dim, keepdim, dtype, out)


@kernel()
def logsumexp_out(self: torch.Tensor, dim: list[int], keepdim: bool, out: torch.Tensor) -> None:
    """logsumexp.out (plain): (self, dim, keepdim, out)."""
    out.resize_(_reduced_shape(self, dim, keepdim))  # a plain out= op sizes its own out
    x = self if self.dtype.is_floating_point else _cast(self, torch.get_default_dtype())
    dims = normalize_dims(dim, x.dim())
    xv, A, R, B = as_arb(x, dims)
    acc = acc_dtype(x.dtype)
    mx = torch.empty((A * B,), dtype=acc, device=x.device)
    run_reduce(xv, A, R, B, mx, MAX, -math.inf)
    run_reduce(xv, A, R, B, out, EXP_SUM, 0, post=POST_LOG_ADD, aux=mx)


@kernel()
def logsumexp(self: torch.Tensor, dim: list[int], keepdim: bool = False) -> torch.Tensor:
    dt = self.dtype if self.dtype.is_floating_point else torch.get_default_dtype()
    out = torch.empty(_reduced_shape(self, dim, keepdim), dtype=dt, device=self.device)
    logsumexp_out(self, dim, keepdim, out)
    return out
