"""Complex numbers: arithmetic, exp, log, sqrt, abs, sgn, sin, cos, sinh, cosh and tanh
(and tanh's gradient) of complex tensors (the
TensorIterator ops of binary.py and unary.py, through their parts: ops/_pointwise.py
`complex_parts`), sum, mean and cat of them (through the real kernels), and the ops that
build complex tensors from real ones, polar and complex.

A complex64 (complex128) tensor is computed as two float32 (float64) strided views of its
storage, the real and the imaginary parts (torch.view_as_real), so every layout and
broadcast of the real kernels holds. What a rotary embedding written with complex
numbers needs runs on the device: torch.polar, view_as_complex / view_as_real (views),
a broadcast complex product, and its backward (a product with a conjugate)."""

import torch
import triton
import triton.language as tl

from . import _math
from ._declare import kernel
from ._pointwise import complex_parts, float_view, pointwise
from .activation import tanh_backward
from .binary import add, div_true, mul
from .unary import abs as abs_, cos, cosh, exp, log, neg, reciprocal, sin, sinh, sqrt, tanh


@complex_parts(add)
@triton.jit
def _add_parts(ar, ai, br, bi, alpha_re, alpha_im):
    # a + alpha * b (sub: alpha negated by ATen's sub)
    return ar + (alpha_re * br - alpha_im * bi), ai + (alpha_re * bi + alpha_im * br)


@complex_parts(mul)
@triton.jit
def _mul_parts(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


@triton.jit
def _quotient(ar, ai, br, bi):
    """(ar + i ai) / (br + i bi) by Smith's scaling (no overflow of br**2 + bi**2), as
    c10::complex divides; a zero divisor gives ar / 0 and ai / 0, as there."""
    big = tl.abs(br) >= tl.abs(bi)
    r = tl.where(big, bi / br, br / bi)
    d = tl.where(big, br + bi * r, bi + br * r)
    re = tl.where(big, ar + ai * r, ar * r + ai) / d
    im = tl.where(big, ai - ar * r, ai * r - ar) / d
    zero = (br == 0) & (bi == 0)
    return tl.where(zero, ar / tl.abs(br), re), tl.where(zero, ai / tl.abs(bi), im)


@complex_parts(div_true)
@triton.jit
def _div_parts(ar, ai, br, bi):
    return _quotient(ar, ai, br, bi)


@complex_parts(reciprocal)
@triton.jit
def _reciprocal_parts(ar, ai):
    return _quotient(ar * 0 + 1, ar * 0, ar, ai)


@complex_parts(neg)
@triton.jit
def _neg_parts(ar, ai):
    return -ar, -ai


@complex_parts(exp)
@triton.jit
def _exp_parts(ar, ai):
    m = tl.exp(ar)
    return m * tl.cos(ai), m * tl.sin(ai)


@triton.jit
def _modulus(ar, ai):
    """|z| without overflow of ar**2 + ai**2."""
    m = tl.maximum(tl.abs(ar), tl.abs(ai))
    s = tl.where(m > 0, m, 1.0)
    q = tl.abs(ar) / s
    p = tl.abs(ai) / s
    return m * tl.sqrt(q * q + p * p)


@complex_parts(abs_)
@triton.jit
def _abs_parts(ar, ai):
    # ATen's abs_out copies the real part of this complex result into its real output
    return _modulus(ar, ai), ar * 0


@complex_parts(log)
@triton.jit
def _log_parts(ar, ai):
    return tl.log(_modulus(ar, ai)), _math.atan2(ai, ar)


@complex_parts(sqrt)
@triton.jit
def _sqrt_parts(ar, ai):
    # the principal root, without cancellation: t = sqrt((|z| + |ar|) / 2) is the part on
    # ar's side, |ai| / (2 t) the other; the imaginary part takes ai's sign
    t = tl.sqrt((_modulus(ar, ai) + tl.abs(ar)) * 0.5)
    other = tl.where(t > 0, tl.abs(ai) / (2 * tl.where(t > 0, t, 1.0)), 0.0)
    im = tl.where(ar >= 0, other, t)
    return tl.where(ar >= 0, t, other), tl.where(ai < 0, -im, im)


@triton.jit
def _sinh_cosh(x):
    """sinh(x) (without cancellation near 0) and cosh(x)."""
    return 0.5 * (_math.expm1(x) - _math.expm1(-x)), 0.5 * (tl.exp(x) + tl.exp(-x))


@complex_parts(sin)
@triton.jit
def _sin_parts(ar, ai):
    sh, ch = _sinh_cosh(ai)
    return tl.sin(ar) * ch, tl.cos(ar) * sh


@complex_parts(cos)
@triton.jit
def _cos_parts(ar, ai):
    sh, ch = _sinh_cosh(ai)
    return tl.cos(ar) * ch, -(tl.sin(ar) * sh)


@complex_parts(sinh)
@triton.jit
def _sinh_parts(ar, ai):
    sh, ch = _sinh_cosh(ar)
    return sh * tl.cos(ai), ch * tl.sin(ai)


@complex_parts(cosh)
@triton.jit
def _cosh_parts(ar, ai):
    sh, ch = _sinh_cosh(ar)
    return ch * tl.cos(ai), sh * tl.sin(ai)


@complex_parts(tanh)
@triton.jit
def _tanh_parts(ar, ai):
    # Kahan's form, which neither overflows nor cancels: with t = tan(ai) and s = sinh(ar),
    # tanh(z) = ((1 + t^2) s cosh(ar) + i t) / (1 + (1 + t^2) s^2); past |ar| of 20 the
    # real part is sign(ar) and the imaginary 2 sin(2 ai) exp(-2 |ar|) (IEEE-exact there)
    t = tl.sin(ai) / tl.cos(ai)
    beta = 1.0 + t * t
    big = tl.abs(ar) > 20.0
    small_ar = tl.where(big, 0.0, ar)
    sh, ch = _sinh_cosh(small_ar)
    den = 1.0 + beta * sh * sh
    re = tl.where(big, tl.where(ar > 0, 1.0, -1.0), beta * sh * ch / den)
    im = tl.where(big, 2.0 * tl.sin(2.0 * ai) * tl.exp(-2.0 * tl.abs(ar)), t / den)
    return re, im


@complex_parts(tanh_backward)
@triton.jit
def _tanh_backward_parts(gr, gi, yr, yi):
    # grad * conj(1 - y^2), as PyTorch's complex tanh_backward
    wr = 1.0 - yr * yr + yi * yi
    wi = 2.0 * yr * yi  # conj(1 - y^2)'s imaginary part
    return gr * wr - gi * wi, gr * wi + gi * wr


@kernel()
@pointwise()
@triton.jit
def sgn(x):
    # ATen sends real tensors to sign_stub: sgn_stub only ever gets complex ones
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)


@complex_parts(sgn)
@triton.jit
def _sgn_parts(ar, ai):
    # z / |z|, 0 at 0 (abs's gradient)
    m = _modulus(ar, ai)
    s = tl.where(m > 0, m, 1.0)
    return tl.where(m > 0, ar / s, 0.0), tl.where(m > 0, ai / s, 0.0)


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


# -- reductions and cat of complex tensors ---------------------------------------------


def sum_views(x, out, is_sum, dtype):
    """(x, out, their float dtype) as float views for a sum or mean of a complex tensor
    (ops/reduction.py reduce_into reduces them over the same dims, the trailing (real,
    imaginary) dimension kept). Other reductions have no complex kernels."""
    if not is_sum or not out.is_complex():
        raise NotImplementedError(
            f"torch_ext: this reduction of {x.dtype} tensors is not supported on "
            "privateuseone (complex kernels: sum, mean)"
        )
    real = torch.float64 if (dtype or out.dtype) == torch.complex128 else torch.float32
    return float_view(x).to(real), torch.view_as_real(out), real


def cat_complex(cat_out, tensors, dim, out):
    """cat of complex tensors (ops/shape.py cat_out): the cat of their float views along
    the same dim into out's; a real input takes a zero imaginary part (PyTorch promotes)."""
    views = []
    for t in tensors:
        if t.dim() == 1 and t.shape[0] == 0 and out.dim() != 1:
            continue  # legacy empty tensors are skipped by cat
        if not t.is_complex():
            real = torch.float64 if out.dtype == torch.complex128 else torch.float32
            t = torch.complex(t.to(real), torch.zeros_like(t, dtype=real))
        elif t.dtype != out.dtype:
            t = torch.view_as_complex(torch.view_as_real(t).to(torch.view_as_real(out).dtype))
        views.append(float_view(t))
    outr = torch.view_as_real(out)
    d = dim % max(out.dim(), 1)
    cat_out(views, d, 0, False, False, False, torch.contiguous_format, outr)


def complex_bmm(a, b, out):
    """out = a @ b for complex matrices (M, K) @ (K, N) or batches of them (ops/matmul.py
    mm and bmm): four real products of the parts, (ar br - ai bi) + i (ar bi + ai br),
    each pair summed by one product and one product-and-add into the parts of out."""
    if out.dim() == 2:
        a, b, out = a.unsqueeze(0), b.unsqueeze(0), out.unsqueeze(0)
    af, bf = float_view(a), float_view(b)
    ar, ai = af[..., 0].contiguous(), af[..., 1].contiguous()
    br, bi = bf[..., 0].contiguous(), bf[..., 1].contiguous()
    re = torch.baddbmm(torch.bmm(ar, br), ai, bi, alpha=-1)
    im = torch.baddbmm(torch.bmm(ar, bi), ai, br)
    outf = torch.view_as_real(out)
    outf[..., 0].copy_(re)
    outf[..., 1].copy_(im)


def complex_addbmm(bias, a, b, beta, alpha, out):
    """out = beta bias + alpha (a @ b) for complex batches (ops/matmul.py addmm, baddbmm):
    the product by complex_bmm, then the scaled sum (bias ignored where beta is 0, NaNs
    included, as PyTorch's)."""
    prod = torch.empty(out.shape, dtype=out.dtype, device=out.device)
    complex_bmm(a, b, prod)
    res = prod if alpha == 1 else prod * alpha
    if beta != 0:
        res = torch.add(res, bias, alpha=beta)
    out.copy_(res)
