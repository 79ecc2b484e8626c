"""Pointwise ops that real models reach (issue 17): inverse hyperbolics, logaddexp2,
shrinkage activations, entr, xlog1py, frexp and renorm's scale factor."""

import triton
import triton.language as tl

from . import _math
from ._pointwise import pointwise
from ._common import kernel


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def acosh(x):
    # log1p form: exact near 1, where x + sqrt(x*x - 1) loses the small part.
    t = x - 1.0
    r = _math.log1p(t + tl.sqrt(2.0 * t + t * t))
    big = tl.log(x) + 0.6931471805599453  # x*x would overflow
    return tl.where(x > 1e18, big, r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def asinh(x):
    a = tl.abs(x)
    r = _math.log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > 1e18, tl.log(a) + 0.6931471805599453, r)
    r = tl.where(x < 0, -r, r)
    return tl.where(x == 0, x, r)  # keeps -0.0


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def atanh(x):
    r = 0.5 * _math.log1p(2.0 * x / (1.0 - x))
    return tl.where(x == 0, x, r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def logaddexp2(a, b):
    m = tl.maximum(a, b)
    r = m + tl.log2(1.0 + tl.exp2(-tl.abs(a - b)))
    return tl.where(a == b, a + 1.0, r)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def hardshrink(x, lambd):
    return tl.where((x >= -lambd) & (x <= lambd), 0.0, x).to(x.dtype)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def softshrink(x, lambd):
    r = tl.where(x > lambd, x - lambd, tl.where(x < -lambd, x + lambd, x * 0.0))
    return r.to(x.dtype)


@kernel()
@pointwise(num_inputs=2)
@triton.jit
def shrink_backward(grad, x, lambd):
    return tl.where((x >= -lambd) & (x <= lambd), 0.0, grad).to(grad.dtype)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def special_entr(x):
    r = -x * tl.log(tl.where(x > 0, x, 1.0))
    r = tl.where(x == 0, 0.0, r)
    r = tl.where(x < 0, float("-inf"), r)
    return tl.where(x != x, x, r)


@kernel()
@pointwise(promotion="int_to_float")
@triton.jit
def xlog1py(x, y):
    r = x * _math.log1p(y)
    return tl.where((x == 0) & (y == y), 0.0, r)


@kernel()
@pointwise(num_inputs=1)
@triton.jit
def renorm_scale_factor(norm, maxnorm):
    # PyTorch's factor: sub-tensors whose norm exceeds maxnorm scale down to it.
    return tl.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(norm.dtype)


OPS = [
    acosh,
    asinh,
    atanh,
    logaddexp2,
    hardshrink,
    softshrink,
    shrink_backward,
    special_entr,
    xlog1py,
    renorm_scale_factor,
]


# -- composites over our kernels (plain ops, convention (3); structured impls (2)) -------

import torch  # noqa: E402


def _sized(out: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
    out.resize_(res.shape)
    out.copy_(res)
    return out


@kernel()
def addbmm(self, batch1, batch2, beta=1, alpha=1):
    """Sum over the batch of batch1[i] @ batch2[i], as one matmul over the concatenated
    inner dimension (fp32 accumulation across batches, one launch)."""
    b, n, k = batch1.shape
    p = batch2.shape[2]
    m1 = batch1.transpose(0, 1).reshape(n, b * k)
    m2 = batch2.reshape(b * k, p)
    return torch.addmm(self, m1, m2, beta=beta, alpha=alpha)


@kernel()
def addbmm_out(self, batch1, batch2, beta, alpha, out):
    return _sized(out, addbmm(self, batch1, batch2, beta, alpha))


@kernel()
def addbmm_(self, batch1, batch2, beta=1, alpha=1):
    self.copy_(addbmm(self, batch1, batch2, beta, alpha))
    return self


@kernel()
def addmv_out(self, mat, vec, beta, alpha, out):
    """addmv.out impl: out = beta * self + alpha * (mat @ vec); beta == 0 ignores self."""
    n = mat.shape[0]
    res = torch.addmm(self.expand(n).unsqueeze(1), mat, vec.unsqueeze(1), beta=beta, alpha=alpha)
    out.copy_(res.squeeze(1))


@kernel()
def vdot(self, other):
    return torch.dot(self.conj(), other)


@kernel()
def vdot_out(self, other, out):
    return _sized(out, vdot(self, other))


@kernel()
def nansum(self, dim=None, keepdim=False, dtype=None):
    x = torch.where(torch.isnan(self), 0, self) if self.is_floating_point() else self
    return torch.sum(x, dim, keepdim, dtype=dtype)


@kernel()
def nansum_out(self, dim, keepdim, dtype, out):
    return _sized(out, nansum(self, dim, keepdim, dtype or out.dtype))


@kernel()
def index_copy_out(self, dim, index, source, out):
    """index_copy.out impl: out = self with out.select(dim, index[i]) = source.select(dim, i)."""
    if not (out.data_ptr() == self.data_ptr() and out.stride() == self.stride()):
        out.copy_(self)
    if out.dim() == 0:
        if index.numel():
            out.copy_(source.reshape(()))
        return
    where = (slice(None),) * dim + (index.reshape(-1),)
    out[where] = source
