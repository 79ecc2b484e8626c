"""Complex numbers: add, sub and mul of complex tensors (the TensorIterator ops of
binary.py, through their parts: ops/_pointwise.py `complex_parts`), and the ops that build
complex tensors from real ones, polar and complex.

A complex64 (complex128) tensor is computed as two float32 (float64) strided views of its
storage, the real and the imaginary parts (torch.view_as_real), so every layout and
broadcast of the real kernels holds. What a rotary embedding written with complex
numbers needs runs on the device: torch.polar, view_as_complex / view_as_real (views),
a broadcast complex product, and its backward (a product with a conjugate)."""

import torch
import triton
import triton.language as tl

from ._declare import kernel
from ._pointwise import complex_parts, pointwise
from .binary import add, mul


@complex_parts(add)
@triton.jit
def _add_parts(ar, ai, br, bi, alpha_re, alpha_im):
    # a + alpha * b (sub: alpha negated by ATen's sub)
    return ar + (alpha_re * br - alpha_im * bi), ai + (alpha_re * bi + alpha_im * br)


@complex_parts(mul)
@triton.jit
def _mul_parts(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@pointwise(num_outputs=2)
@triton.jit
def _polar_parts(r, theta):
    return r * tl.cos(theta), r * tl.sin(theta)


@pointwise(num_outputs=2)
@triton.jit
def _pair(re, im):
    return re, im


_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def _build(name, first, second, out, parts):
    """out (resized to the broadcast shape) = parts(first, second) through out's real
    and imaginary views, after PyTorch's checks of the two real inputs and of out."""
    for t in (first, second, out):
        if t.device != out.device or t.device.type != first.device.type:
            raise RuntimeError(
                f"{name}: expected all tensors on one device, got {first.device}, "
                f"{second.device} and out on {out.device}"
            )
    if first.dtype != second.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {_name(first.dtype)} but got scalar type "
            f"{_name(second.dtype)} for second argument"
        )
    if first.dtype == torch.float16:
        raise NotImplementedError(
            f"torch_ext: {name} of float16 tensors (a complex32 result) is not supported "
            "on privateuseone"
        )
    if first.dtype not in _COMPLEX_OF:
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got "
            f"{_name(first.dtype)} and {_name(second.dtype)}"
        )
    want = _COMPLEX_OF[first.dtype]
    if out.dtype != want:
        raise RuntimeError(
            f"Expected object of scalar type {_name(want)} but got scalar type "
            f"{_name(out.dtype)} for argument 'out'"
        )
    shape = torch.broadcast_shapes(first.shape, second.shape)
    if tuple(out.shape) != tuple(shape):
        out.resize_(shape)
    if out.numel():
        r = torch.view_as_real(out)
        parts(first.expand(shape), second.expand(shape), out=(r[..., 0], r[..., 1]))
    return out


def _name(dtype):
    from ._common import scalar_name

    return scalar_name(dtype)


@kernel()
def polar_out(abs: torch.Tensor, angle: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """polar.out(abs, angle, out): abs * (cos(angle) + i sin(angle)); torch.polar (its
    CompositeExplicitAutograd form) calls it."""
    return _build("polar", abs, angle, out, _polar_parts)


@kernel()
def complex_out(real: torch.Tensor, imag: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """complex.out(real, imag, out): real + i imag (torch.complex)."""
    return _build("complex", real, imag, out, _pair)
