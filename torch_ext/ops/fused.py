"""Fused ops for torch_ext:: (plain, convention (3)); each has a backward.

  skip_layer_norm(x, residual, normalized_shape, weight?, bias?, eps)
      -> (out, mean, rstd) of layer_norm(x + residual)
  skip_rms_norm(x, residual, normalized_shape, weight?, eps) -> (out, rstd)
  fused_add_rms_norm(x, residual, normalized_shape, weight?, eps)
      -> (out, x + residual)          (the sum is the next block's residual)
  gelu_and_mul(x, approximate) -> gelu(x[..., :d]) * x[..., d:]
  gelu_and_mul_backward(grad, x, approximate) -> dx
  silu_and_mul(x) / silu_and_mul_backward(grad, x)
  rotary_embedding(x, cos, sin, interleaved) -> out
      x (..., D); cos/sin broadcastable to x[..., :D/2]; out1 = x1 cos - x2 sin,
      out2 = x2 cos + x1 sin, with (x1, x2) the halves (or even/odd lanes when
      interleaved).  Its backward is rotary_embedding with -sin.
The backward of the norm ones is native_layer_norm_backward / rms_norm_bwd
(the gradient of the residual equals that of x).
"""

import torch
import triton
import triton.language as tl

from . import _math
from .binary import add
from .normalization import native_layer_norm, rms_norm_fwd
from ._pointwise import pointwise
from ._declare import kernel


@kernel()
def skip_layer_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    normalized_shape: list[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return native_layer_norm(add(x, residual, 1), normalized_shape, weight, bias, eps)


@kernel()
def skip_rms_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    normalized_shape: list[int],
    weight: torch.Tensor | None,
    eps: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    return rms_norm_fwd(add(x, residual, 1), normalized_shape, weight, eps)


@kernel()
def fused_add_rms_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    normalized_shape: list[int],
    weight: torch.Tensor | None,
    eps: float | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    s = add(x, residual, 1)
    out, _ = rms_norm_fwd(s, normalized_shape, weight, eps)
    return out, s


@pointwise()
@triton.jit
def _gelu_mul(a, b):
    return 0.5 * a * (1.0 + tl.erf(a * 0.7071067811865476)) * b


@pointwise()
@triton.jit
def _gelu_tanh_mul(a, b):
    inner = 0.7978845608028654 * (a + 0.044715 * a * a * a)
    return 0.5 * a * (1.0 + _math.tanh(inner)) * b


@pointwise(num_outputs=2)
@triton.jit
def _gelu_mul_bwd(g, a, b):
    cdf = 0.5 * (1.0 + tl.erf(a * 0.7071067811865476))
    pdf = _math.exp_ftz(-0.5 * a * a) * 0.3989422804014327
    return g * b * (cdf + a * pdf), g * a * cdf


@pointwise(num_outputs=2)
@triton.jit
def _gelu_tanh_mul_bwd(g, a, b):
    k = 0.7978845608028654
    a2 = a * a
    t = _math.tanh(k * (a + 0.044715 * a2 * a))
    dgelu = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * a2)
    return g * b * dgelu, g * 0.5 * a * (1.0 + t)


@pointwise()
@triton.jit
def _silu_mul(a, b):
    return a / (1.0 + _math.exp_ftz(-a)) * b


@pointwise(num_outputs=2)
@triton.jit
def _silu_mul_bwd(g, a, b):
    s = 1.0 / (1.0 + _math.exp_ftz(-a))
    return g * b * s * (1.0 + a * (1.0 - s)), g * a * s


def _halves(x):
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:], d


def _tanh(approximate):
    return approximate in ("tanh", 1)


@kernel()
def gelu_and_mul(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    a, b, _ = _halves(x)
    return (_gelu_tanh_mul if _tanh(approximate) else _gelu_mul)(a, b)


@kernel()
def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    a, b, _ = _halves(x)
    return _silu_mul(a, b)


def _and_mul_backward(op, grad, x):
    a, b, _ = _halves(x)
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    da, db, _ = _halves(dx)
    op(grad, a, b, out=(da, db))
    return dx


@kernel()
def gelu_and_mul_backward(
    grad: torch.Tensor, x: torch.Tensor, approximate: str = "none"
) -> torch.Tensor:
    return _and_mul_backward(_gelu_tanh_mul_bwd if _tanh(approximate) else _gelu_mul_bwd, grad, x)


@kernel()
def silu_and_mul_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return _and_mul_backward(_silu_mul_bwd, grad, x)


@pointwise(num_outputs=2)
@triton.jit
def _rotate(x1, x2, c, s):
    return x1 * c - x2 * s, x2 * c + x1 * s


@kernel()
def rotary_embedding(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False
) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if interleaved:
        x1, x2, o1, o2 = x[..., 0::2], x[..., 1::2], out[..., 0::2], out[..., 1::2]
    else:
        x1, x2, _ = _halves(x)
        o1, o2, _ = _halves(out)
    shape = x1.shape
    _rotate.iter((o1, o2), (x1, x2, cos.expand(shape), sin.expand(shape)), x.dtype)
    return out


@kernel()
def rotary_embedding_backward(
    grad: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool = False
) -> torch.Tensor:
    from .unary import neg

    return rotary_embedding(grad, cos, neg(sin), interleaved)
