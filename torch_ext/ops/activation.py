"""Activations and their backward (convention (1), DispatchStub names).

Iterator operand order follows PyTorch's meta functions:
  threshold(x, other; threshold, value)   out = x <= threshold ? value : other
      (threshold_backward reaches it with (self, grad) and value 0)
  gelu(x; approximate), gelu_backward(grad, x; approximate)
  silu(x), silu_backward(grad, x)
  sigmoid_backward(grad, y), tanh_backward(grad, y)
  leaky_relu(x; negval), leaky_relu_backward(x, grad; negval)
  elu(x; alpha, scale, input_scale), elu_backward(grad, x_or_y; ..., is_result)
  hardtanh_backward(grad, x; min, max)
  hardsigmoid(x), hardsigmoid_backward(grad, x), hardswish(x), hardswish_backward(grad, x)
  softplus(x; beta, threshold), softplus_backward(grad, x; beta, threshold)
  mse(a, b), mse_backward(x, target, grad; norm)
"""

import triton
import triton.language as tl
import torch

from . import _math
from ._pointwise import pointwise
from ._common import scalar_name
from ._declare import Scalar, kernel


@kernel()
@pointwise(num_inputs=1, cast=[False])
@triton.jit
def hardshrink(x, lambd):
    # x as stored: PyTorch compares it with lambd rounded to the tensor's dtype
    lam = _math._scalar_in(lambd, x)
    v = x.to(lam.dtype)
    return tl.where((v >= -lam) & (v <= lam), 0.0, v)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def softshrink(x, lambd):
    r = tl.where(x > lambd, x - lambd, tl.where(x < -lambd, x + lambd, x * 0.0))
    return r.to(x.dtype)


@kernel()
@pointwise(num_inputs=2, cast=[True, False])
@triton.jit
def shrink_backward(grad, x, lambd):
    # x as stored, lambd rounded to its dtype (as PyTorch's hard/softshrink backward)
    lam = _math._scalar_in(lambd, x)
    v = x.to(lam.dtype)
    return tl.where((v >= -lam) & (v <= lam), 0.0, grad).to(grad.dtype)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def threshold(x, other, th, value):
    return tl.where(x <= th, value, other)


@pointwise(promotion="int_to_float")
@triton.jit
def gelu_none(x):
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@pointwise(promotion="int_to_float")
@triton.jit
def gelu_tanh(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + _math.tanh(inner))


@triton.jit
def _normal_cdf_pdf_16(x):
    """Phi(x) and phi(x) for 16-bit data, from Abramowitz-Stegun 7.1.26's erfc (t P(t)
    e^-a^2, a = |x|/sqrt(2)): a reciprocal and an exp where libdevice's erf took about
    twice the instructions (gelu on 64M bf16: 87% of copy bandwidth against 70%, H200).
    Phi of a negative x is the erfc itself, not 1 + erf (which cancels): relative
    error under 7e-4 for x > -4.2, below bf16's and fp16's rounding, and no worse than
    float32 1 + erf's beyond."""
    a = tl.abs(x) * 0.7071067811865476
    t = tl.fdiv(1.0, 1.0 + 0.3275911 * a)  # approximate (2 ulp): 16-bit results
    e = _math.exp_ftz(-a * a)
    poly = 0.254829592 + t * (
        -0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))
    )
    q = 0.5 * t * poly * e  # erfc(a) / 2
    return tl.where(x < 0, q, 1.0 - q), e * 0.3989422804014327


@pointwise(promotion="int_to_float")
@triton.jit
def gelu_none_16(x):
    cdf, _ = _normal_cdf_pdf_16(x)
    return x * cdf


@pointwise(promotion="int_to_float")
@triton.jit
def gelu_tanh_16(x):
    # 0.5 x (1 + tanh(u)) = x sigmoid(2u): one exp and a division, no cancellation for
    # negative x (libdevice's tanh ran 64M bf16 at 77% of copy bandwidth, H200)
    u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return tl.fdiv(x, 1.0 + _math.exp_ftz(-2.0 * u))


@pointwise()
@triton.jit
def gelu_tanh_backward_16(grad, x):
    k = 0.7978845608028654
    x2 = x * x
    s = tl.fdiv(1.0, 1.0 + _math.exp_ftz(-2.0 * k * (x + 0.044715 * x2 * x)))  # (1 + tanh(u)) / 2
    return grad * (s + 2.0 * x * s * (1.0 - s) * k * (1.0 + 3.0 * 0.044715 * x2))


@pointwise()
@triton.jit
def gelu_none_backward_16(grad, x):
    cdf, pdf = _normal_cdf_pdf_16(x)
    return grad * (cdf + x * pdf)


@pointwise()
@triton.jit
def gelu_none_backward(grad, x):
    cdf = 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))
    pdf = _math.exp_ftz(-0.5 * x * x) * 0.3989422804014327
    return grad * (cdf + x * pdf)


@pointwise()
@triton.jit
def gelu_tanh_backward(grad, x):
    k = 0.7978845608028654
    x2 = x * x
    inner = k * (x + 0.044715 * x2 * x)
    t = _math.tanh(inner)
    d_inner = k * (1.0 + 3.0 * 0.044715 * x2)
    return grad * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner)


_HALF = (torch.float16, torch.bfloat16)  # the dtypes the 16-bit gelu kernels serve
# (tanh approximation, 16-bit) -> kernel
_GELU = {
    (False, False): gelu_none,
    (False, True): gelu_none_16,
    (True, False): gelu_tanh,
    (True, True): gelu_tanh_16,
}
_GELU_BACKWARD = {
    (False, False): gelu_none_backward,
    (False, True): gelu_none_backward_16,
    (True, False): gelu_tanh_backward,
    (True, True): gelu_tanh_backward_16,
}


def _is_tanh(approximate, dtype):
    """Whether gelu is the tanh approximation; as PyTorch's kernels, an approximation
    other than none and tanh and a dtype other than floating are errors. GeluType
    arrives as its enum value (0 none, 1 tanh) or as the string."""
    if approximate not in (0, 1, "none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"GeluKernelImpl\" not implemented for '{scalar_name(dtype)}'")
    return approximate in (1, "tanh")


@kernel(shapes=True)  # a Pointwise's iterator form: sizes traced there
def gelu(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    approximate: str = 0,
) -> None:
    _GELU[_is_tanh(approximate, common_dtype), common_dtype in _HALF].iter(outs, ins, common_dtype)


@kernel(shapes=True)
def gelu_backward(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    approximate: str = 0,
) -> None:
    tanh = _is_tanh(approximate, common_dtype)
    _GELU_BACKWARD[tanh, common_dtype in _HALF].iter(outs, ins, common_dtype)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def silu(x):
    return x / (1.0 + _math.exp_ftz(-x))


@kernel()
@pointwise()
@triton.jit
def silu_backward(grad, x):
    s = 1.0 / (1.0 + _math.exp_ftz(-x))
    return grad * s * (1.0 + x * (1.0 - s))


@kernel()
@pointwise()
@triton.jit
def sigmoid_backward(grad, y):
    return grad * (1.0 - y) * y


@kernel()
@pointwise()
@triton.jit
def tanh_backward(grad, y):
    return grad * (1.0 - y * y)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def leaky_relu(x, negval):
    return tl.where(x > 0, x, x * negval)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def logit_backward(grad, x, eps):
    # eps < 0 (None): NaN outside [0, 1]; else 0 outside [eps, 1 - eps].
    d = grad / (x * (1.0 - x))
    lo = tl.where(eps < 0, 0.0, eps)
    outside = (x < lo) | (x > 1.0 - lo)
    return tl.where(outside, tl.where(eps < 0, float("nan"), 0.0), d)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def leaky_relu_backward(x, grad, negval):
    return tl.where(x > 0, grad, grad * negval)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def elu(x, alpha, scale, input_scale):
    neg = _math.expm1(x * input_scale) * (alpha * scale)
    return tl.where(x <= 0, neg, x * scale)


@pointwise(num_inputs=2)
@triton.jit
def elu_backward(grad, b, alpha, scale, input_scale, is_result):
    if is_result:
        neg = grad * input_scale * (b + alpha * scale)
    else:
        neg = grad * input_scale * alpha * scale * tl.exp(b * input_scale)
    return tl.where(b <= 0, neg, grad * scale)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def hardtanh_backward(grad, x, lo, hi):
    return tl.where((x <= lo) | (x >= hi), 0.0, grad)


@kernel()
@pointwise()
@triton.jit
def hardsigmoid(x):
    return tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0


@kernel()
@pointwise()
@triton.jit
def hardsigmoid_backward(grad, x):
    return tl.where((x > -3.0) & (x < 3.0), grad / 6.0, 0.0)


@kernel()
@pointwise()
@triton.jit
def hardswish(x):
    return x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0


@kernel()
@pointwise()
@triton.jit
def hardswish_backward(grad, x):
    r = tl.where(x < 3.0, grad * (x / 3.0 + 0.5), grad)
    return tl.where(x <= -3.0, 0.0, r)


@kernel()
@pointwise(num_inputs=1, takes="floating")
@triton.jit
def softplus(x, beta, th):
    xb = x * beta
    return tl.where(xb > th, x, _math.log1p(tl.exp(xb)) / beta)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def softplus_backward(grad, x, beta, th):
    z = tl.exp(x * beta)
    return tl.where(x * beta > th, grad, grad * z / (z + 1.0))


@kernel()
@pointwise()
@triton.jit
def mse(a, b):
    d = a - b
    return d * d


@kernel()
@pointwise(num_inputs=3)
@triton.jit
def mse_backward(x, target, grad, norm):
    return norm * (x - target) * grad


# -- plain (non-structured) activation ops, convention (3) ------------------


@kernel("elu_backward", shapes=True)
def _elu_backward(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    alpha: Scalar,
    scale: Scalar,
    input_scale: Scalar,
    is_result: bool,
) -> None:
    elu_backward.iter(outs, ins, common_dtype, alpha, scale, input_scale, bool(is_result))


def relu(self):
    """relu(self) -> Tensor."""
    return threshold(self, self, 0, 0)


def relu_(self):
    threshold.iter((self,), (self, self), self.dtype, 0, 0)
    return self


def hardtanh_out(self, min_val, max_val, out):
    from .ternary import clamp_scalar

    clamp_scalar.iter((out,), (self.expand(out.shape),), self.dtype, min_val, max_val)
    return out


def hardtanh(self, min_val=-1.0, max_val=1.0):
    from .ternary import clamp_scalar

    return clamp_scalar(self, min_val, max_val)


def hardtanh_(self, min_val=-1.0, max_val=1.0):
    return hardtanh_out(self, min_val, max_val, self)


@kernel()
def rrelu_with_noise(
    self: torch.Tensor,
    noise: torch.Tensor,
    lower: Scalar = 0.125,
    upper: Scalar = 1.0 / 3.0,
    training: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """rrelu_with_noise(self, noise, lower, upper, training, generator): in
    training, negative inputs are scaled by a uniform draw from [lower, upper]
    (kept in `noise`, 1 for the others); in eval by (lower + upper) / 2."""
    if not training:
        return leaky_relu(self, (float(lower) + float(upper)) / 2)
    r = torch.empty_like(self).uniform_(float(lower), float(upper), generator=generator)
    r = torch.where(self >= 0, torch.ones_like(r), r)
    if list(noise.shape) != list(self.shape):
        noise.resize_(self.shape)
    noise.copy_(r)
    return self * r


@kernel()
def rrelu_with_noise_(
    self: torch.Tensor,
    noise: torch.Tensor,
    lower: Scalar = 0.125,
    upper: Scalar = 1.0 / 3.0,
    training: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    return self.copy_(rrelu_with_noise(self, noise, lower, upper, training, generator))


# ---------------------------------------------------------------------------
# activations and losses: stub kernels (1)


@triton.jit
def _softplus(x):
    # log(1 + e^x) without overflow.
    return tl.maximum(x, 0.0) + _math.log1p(tl.exp(-tl.abs(x)))


@kernel()
@pointwise(promotion="int_to_float", takes="floating")
@triton.jit
def mish(x):
    return x * _math.tanh(_softplus(x))


@kernel()
@pointwise()
@triton.jit
def mish_backward(grad, x):
    t = _math.tanh(_softplus(x))
    sig = 1.0 / (1.0 + tl.exp(-x))
    return grad * (t + x * sig * (1.0 - t * t))


@kernel()
@pointwise()
@triton.jit
def prelu(x, w):
    return tl.where(x > 0, x, w * x)


@kernel()
@pointwise(num_outputs=2)
@triton.jit
def prelu_backward(x, w, grad):
    pos = x > 0
    return tl.where(pos, grad, w * grad), tl.where(pos, 0.0, x * grad)


@pointwise(takes="floating")
@triton.jit
def glu(a, b):
    return a / (1.0 + tl.exp(-b))


@pointwise(num_outputs=2)
@triton.jit
def _glu_backward(grad, a, b):
    sig = 1.0 / (1.0 + tl.exp(-b))
    ga = grad * sig
    return ga, ga * a * (1.0 - sig)


@pointwise(num_outputs=1)
@triton.jit
def _log_sigmoid(x):
    # min(x, 0) - log(1 + e^-|x|)
    return tl.minimum(x, 0.0) - _math.log1p(tl.exp(-tl.abs(x)))


@pointwise()
@triton.jit
def _log_sigmoid_backward(grad, x):
    # d/dx log(sigmoid(x)) = sigmoid(-x), written without overflow.
    z = tl.exp(-tl.abs(x))
    return grad * tl.where(x < 0, 1.0 / (1.0 + z), z / (1.0 + z))


@pointwise(promotion="bool")
@triton.jit
def _outside_unit(x):
    return ~((x >= 0) & (x <= 1))


# ---------------------------------------------------------------------------
# plain ops (3)


def _check_float(name, *tensors):
    for t in tensors:
        if t is not None and not t.is_floating_point():
            raise RuntimeError(f"{name}: expected a floating-point tensor, got {t.dtype}")


@kernel()
def log_sigmoid_forward_out(
    self: torch.Tensor, output: torch.Tensor, buffer: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """log_sigmoid_forward.output(self, *, output, buffer): the buffer stays
    empty (as on CUDA; the backward does not need it)."""
    _check_float("log_sigmoid_forward", self)
    output.resize_(self.shape)
    buffer.resize_((0,))
    _log_sigmoid(self, out=output)
    return output, buffer


@kernel()
def log_sigmoid_forward(self: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    output = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    buffer = torch.empty((0,), dtype=self.dtype, device=self.device)
    return log_sigmoid_forward_out(self, output, buffer)


@kernel()
def log_sigmoid_backward_out(
    grad_output: torch.Tensor, self: torch.Tensor, buffer: torch.Tensor, grad_input: torch.Tensor
) -> torch.Tensor:
    shape = torch.broadcast_shapes(grad_output.shape, self.shape)
    grad_input.resize_(shape)
    _log_sigmoid_backward(grad_output, self, out=grad_input)
    return grad_input


@kernel()
def log_sigmoid_backward(
    grad_output: torch.Tensor, self: torch.Tensor, buffer: torch.Tensor
) -> torch.Tensor:
    shape = torch.broadcast_shapes(grad_output.shape, self.shape)
    dtype = torch.result_type(grad_output, self)
    out = torch.empty(shape, dtype=dtype, device=self.device)
    return log_sigmoid_backward_out(grad_output, self, buffer, out)


def _glu_dim(self, dim):
    if self.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + self.dim() if dim < 0 else dim
    if not 0 <= d < self.dim():
        raise IndexError(
            f"Dimension out of range (expected to be in range of "
            f"[{-self.dim()}, {self.dim() - 1}], but got {dim})"
        )
    n = self.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    return d, n // 2


@kernel()
def glu_out(self: torch.Tensor, dim: int, out: torch.Tensor) -> None:
    """glu.out impl (structured, PyTorch's meta sized `out`)."""
    d, h = _glu_dim(self, dim)
    glu.iter((out,), (self.narrow(d, 0, h), self.narrow(d, h, h)), self.dtype)


@kernel()
def glu_backward_out(
    grad_output: torch.Tensor, self: torch.Tensor, dim: int, grad_input: torch.Tensor
) -> torch.Tensor:
    d, h = _glu_dim(self, dim)
    expected = list(self.shape)
    expected[d] = h
    if list(grad_output.shape) != expected:
        raise RuntimeError(
            f"glu_backward: grad_output of size {list(grad_output.shape)} does not "
            f"match the output size {expected}"
        )
    grad_input.resize_(self.shape)
    a, b = self.narrow(d, 0, h), self.narrow(d, h, h)
    _glu_backward.iter(
        (grad_input.narrow(d, 0, h), grad_input.narrow(d, h, h)),
        (grad_output, a, b),
        torch.result_type(grad_output, self),
    )
    return grad_input


@kernel()
def glu_backward(grad_output: torch.Tensor, self: torch.Tensor, dim: int) -> torch.Tensor:
    out = torch.empty(self.shape, dtype=self.dtype, device=self.device)
    return glu_backward_out(grad_output, self, dim, out)
