"""Losses other than nll (loss_nll.py) and mse (PyTorch's structured op over our
mse/mse_backward stubs, activation.py): multi_margin_loss, smooth L1 and Huber, binary
cross entropy. reduction: 0 none, 1 mean, 2 sum.
"""

import torch
import triton
import triton.language as tl

from ._common import scalar_name
from .copy import copy_kernel
from .reduction import SUM, reduce_into
from . import _math
from ._pointwise import pointwise
from ._declare import Scalar, kernel
from .activation import _check_float, _outside_unit

NONE, MEAN, SUM_RED = 0, 1, 2


# -- multi_margin_loss: composed from our kernels --------------------------------


def _margin_terms(self, target, p, margin, weight=None):
    """(x (N, C), target (N,), per-element active terms before the power, mask)."""
    if p not in (1, 2):
        raise RuntimeError("only p == 1 and p == 2 supported")
    if self.dim() > 2 or self.dim() and self.shape[-1] == 0:
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(self.shape)}"
        )
    frames = self.shape[0] if self.dim() == 2 else 1
    if target.dim() > 1 or target.numel() != frames:
        raise RuntimeError(
            f"multi_margin_loss: inconsistent target size, expected {frames} but got "
            f"{list(target.shape)}: the target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{frames}], but got "
            f"{list(target.shape)}. Input has shape {list(self.shape)}."
        )
    x = self.reshape(-1, self.shape[-1] if self.dim() else 1)
    if weight is not None and (weight.dim() > 1 or weight.numel() != x.shape[1]):
        raise RuntimeError(
            f"inconsistent weight size, expected {x.shape[1]} but got {list(weight.shape)}"
        )
    if target.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type Long but found {scalar_name(target.dtype)}")
    y = target.reshape(-1)
    xy = torch.gather(x, 1, y.unsqueeze(1))
    m = float(margin) - xy + x
    keep = m > 0
    keep.scatter_(1, y.unsqueeze(1), False)
    return x, y, m, keep


@kernel()
def multi_margin_loss(
    self: torch.Tensor,
    target: torch.Tensor,
    p: Scalar = 1,
    margin: Scalar = 1,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    x, y, m, keep = _margin_terms(self, target, int(p), margin, weight)
    z = torch.where(keep, m * m if int(p) == 2 else m, torch.zeros_like(m))
    if weight is not None:
        z = z * weight.index_select(0, y).unsqueeze(1).to(z.dtype)
    loss = z.sum(1) / x.shape[1]
    if reduction == NONE:
        return loss.reshape(target.shape) if self.dim() == 2 else loss.reshape([])
    return loss.mean() if reduction == MEAN else loss.sum()


@kernel()
def multi_margin_loss_out(
    self: torch.Tensor,
    target: torch.Tensor,
    p: Scalar,
    margin: Scalar,
    weight: torch.Tensor | None,
    reduction: int,
    out: torch.Tensor,
) -> torch.Tensor:
    r = multi_margin_loss(self, target, p, margin, weight, reduction)
    out.resize_(r.shape)
    copy_kernel((out,), (r,))
    return out


@kernel()
def multi_margin_loss_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    p: Scalar,
    margin: Scalar,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    x, y, m, keep = _margin_terms(self, target, int(p), margin, weight)
    d = torch.where(keep, 2 * m if int(p) == 2 else torch.ones_like(m), torch.zeros_like(m))
    if weight is not None:
        d = d * weight.index_select(0, y).unsqueeze(1).to(d.dtype)
    d = d / x.shape[1]
    d.scatter_(1, y.unsqueeze(1), -d.sum(1, keepdim=True))
    g = grad_output.reshape(-1, 1) if reduction == NONE else grad_output.reshape(1, 1)
    if reduction == MEAN:
        g = g / x.shape[0]
    return (d * g.to(d.dtype)).reshape(self.shape)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def smooth_l1(x, target, beta):
    z = tl.abs(x - target)
    return tl.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)


@kernel()
@pointwise(num_inputs=3)
@triton.jit
def smooth_l1_backward(x, target, grad, norm, beta):
    d = x - target
    r = tl.where(d >= beta, norm * grad, norm * d * grad / beta)
    return tl.where(d <= -beta, -norm * grad, r)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def huber(x, target, delta):
    z = tl.abs(x - target)
    return tl.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))


@kernel()
@pointwise(num_inputs=3)
@triton.jit
def huber_backward(x, target, grad, norm, delta):
    d = x - target
    r = tl.where(d >= delta, norm * grad * delta, norm * d * grad)
    return tl.where(d <= -delta, -norm * grad * delta, r)


@pointwise(num_inputs=3)
@triton.jit
def _bce(x, y, w):
    # -w (y log x + (1 - y) log(1 - x)), each log clamped at -100 (PyTorch).
    lx = tl.maximum(tl.log(x), -100.0)
    l1x = tl.maximum(_math.log1p(-x), -100.0)
    return w * ((y - 1.0) * l1x - y * lx)


@pointwise(num_inputs=4)
@triton.jit
def _bce_backward(grad, x, y, w, norm):
    # grad (x - y) / max((1 - x) x, 1e-12), times weight and 1/numel (mean).
    d = tl.maximum((1.0 - x) * x, 1e-12)
    return w * norm * grad * (x - y) / d


def _bce_operands(name, self, target, weight):
    _check_float(name, self, target, weight)
    if target.dtype != self.dtype:
        raise RuntimeError(
            f"{name}: target dtype {target.dtype} differs from input dtype {self.dtype}"
        )
    if target.shape != self.shape:
        if target.numel() != self.numel():
            raise RuntimeError(
                f"{name}: target size {list(target.shape)} does not match input size "
                f"{list(self.shape)}"
            )
        target = target.reshape(self.shape)  # PyTorch squeezes both: same elements in order
    w = 1.0
    if weight is not None:
        try:
            ok = torch.broadcast_shapes(weight.shape, self.shape) == self.shape
        except RuntimeError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"{name}: weight of size {list(weight.shape)} does not broadcast to "
                f"the input size {list(self.shape)}"
            )
        w = weight.expand(self.shape)
    return target, w


def _check_unit(name, what, t):
    if t.numel() and bool(_outside_unit(t).any().item()):
        raise RuntimeError(f"{name}: all elements of {what} should be between 0 and 1")


def _reduce_loss(loss, reduction, out):
    n = loss.numel()
    scale = (1.0 / n if n else float("nan")) if reduction == MEAN else 1.0
    reduce_into(loss, None, out, SUM, scale=scale)


def _check_reduction(name, reduction):
    if reduction not in (NONE, MEAN, SUM_RED):
        raise RuntimeError(
            f"{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction}"
        )


@kernel()
def binary_cross_entropy_out(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    out: torch.Tensor,
) -> torch.Tensor:
    name = "binary_cross_entropy"
    _check_reduction(name, reduction)
    target, w = _bce_operands(name, self, target, weight)
    _check_unit(name, "input", self)
    _check_unit(name, "target", target)
    if reduction == NONE:
        out.resize_(self.shape)
        _bce(self, target, w, out=out)
        return out
    loss = _bce(self, target, w)
    out.resize_(())
    _reduce_loss(loss, reduction, out)
    return out


@kernel()
def binary_cross_entropy(
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    out = torch.empty((), dtype=self.dtype, device=self.device)
    return binary_cross_entropy_out(self, target, weight, reduction, out)


@kernel()
def binary_cross_entropy_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None,
    reduction: int,
    grad_input: torch.Tensor,
) -> torch.Tensor:
    name = "binary_cross_entropy_backward"
    _check_reduction(name, reduction)
    target, w = _bce_operands(name, self, target, weight)
    norm = 1.0 / self.numel() if reduction == MEAN and self.numel() else 1.0
    grad_input.resize_(self.shape)
    _bce_backward(grad_output.expand(self.shape), self, target, w, norm, out=grad_input)
    return grad_input


@kernel()
def binary_cross_entropy_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    reduction: int = MEAN,
) -> torch.Tensor:
    out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    return binary_cross_entropy_backward_out(grad_output, self, target, weight, reduction, out)
