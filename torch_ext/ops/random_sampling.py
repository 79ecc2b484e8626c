"""Samplers of torch.distributions that need more than one draw an element: gamma (Gamma,
Chi2, and through it Beta and Dirichlet), Dirichlet, Poisson and binomial, on the
device's Philox generator (reproducible under manual_seed, as random.py's).

Each element owns a fixed run of Philox counters (two a round, `ROUNDS` rounds)
and the rejection loops run that many rounds for every lane, keeping each lane's first
accepted candidate: the chance a lane rejects every round is below 1e-15 for gamma
(Marsaglia and Tsang, acceptance >= 0.95 a round) and for Poisson and binomial's
transformed rejection (Hormann's PTRS and BTRS, >= 0.8 a round); such a lane keeps the
mode of its distribution. Small Poisson rates and binomial means invert one uniform by
a bounded sequential search instead (the bound passes the mean by 12 standard
deviations). Gamma samples are at least the dtype's smallest normal number, as torch's
(a Dirichlet component is never 0)."""

import torch
import triton
import triton.language as tl

from ..backends import spec
from ._common import block_for
from ._declare import kernel
from ._launch import cdiv, launch
from .random import philox_draw
from .special import _lgamma_pos

ROUNDS = 16
_ROUNDS = tl.constexpr(ROUNDS)
_SEARCH = tl.constexpr(64)  # steps of the inversion search (small means)
_SMALL = tl.constexpr(10.0)  # means under this invert; at or above, transformed rejection


@triton.jit
def _gamma_one(alpha, seed, c):
    """A Gamma(alpha, 1) draw per lane (float32 alpha > 0) from counters c, c + 4, ...:
    Marsaglia-Tsang for alpha + 1 when alpha < 1 (times u ** (1 / alpha)), else alpha."""
    boost = alpha < 1.0
    a = tl.where(boost, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    k = 1.0 / tl.sqrt(9.0 * d)
    out = d  # the mode's neighbourhood, kept by a lane that rejects every round
    done = alpha != alpha  # all False
    for r in range(_ROUNDS):
        x = tl.randn(seed, c + 8 * r)
        u = tl.rand(seed, c + 8 * r + 4)
        t = 1.0 + k * x
        v = t * t * t
        ok = (v > 0) & (tl.log(u) < 0.5 * x * x + d - d * v + d * tl.log(tl.maximum(v, 1e-30)))
        out = tl.where(ok & ~done, d * v, out)
        done = done | ok
    ub = tl.rand(seed, c + 8 * _ROUNDS)
    return tl.where(boost, out * tl.exp(tl.log(ub) / alpha), out)


@triton.jit(do_not_specialize=["seed", "offset"])
def _gamma_kernel(alpha, out, n, seed, offset, TINY: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    a = tl.load(alpha + o, mask=m, other=1).to(tl.float32)
    g = _gamma_one(a, seed, offset + o * (8 * _ROUNDS + 4))
    g = tl.where(a == 0, 0.0, tl.maximum(g, TINY))
    g = tl.where(a != a, a, g)  # NaN in, NaN out
    tl.store(out + o, g.to(out.dtype.element_ty), mask=m)


@triton.jit
def _log_factorial(k):
    return _lgamma_pos(k + 1.0)


@triton.jit
def _poisson_one(lam, seed, c):
    """A Poisson(lam) draw per lane (float32): inversion up to _SMALL, else PTRS."""
    # inversion: the first k whose cumulative probability passes u
    u = tl.rand(seed, c)
    p = tl.exp(-lam)
    s = p
    k_inv = lam * 0.0
    for i in range(1, _SEARCH):
        more = u > s
        k_inv = tl.where(more, i * 1.0, k_inv)
        p = p * lam / i
        s = tl.where(more, s + p, s)
    # transformed rejection (Hormann 1993)
    big = tl.maximum(lam, _SMALL)
    slam = tl.sqrt(big)
    loglam = tl.log(big)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    out = tl.floor(big)
    done = lam != lam
    for r in range(_ROUNDS):
        uu = tl.rand(seed, c + 4 + 8 * r) - 0.5
        vv = tl.rand(seed, c + 8 + 8 * r)
        us = 0.5 - tl.abs(uu)
        k = tl.floor((2.0 * a / us + b) * uu + big + 0.43)
        quick = (us >= 0.07) & (vv <= vr)
        lhs = tl.log(vv * inv_alpha / (a / (us * us) + b))
        rhs = -big + k * loglam - _log_factorial(tl.maximum(k, 0.0))
        ok = quick | ((k >= 0) & ~((us < 0.013) & (vv > us)) & (lhs <= rhs))
        out = tl.where(ok & ~done, k, out)
        done = done | ok
    return tl.where(lam < _SMALL, k_inv, out)


@triton.jit(do_not_specialize=["seed", "offset"])
def _poisson_kernel(rate, out, n, seed, offset, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    lam = tl.load(rate + o, mask=m, other=0).to(tl.float32)
    k = _poisson_one(lam, seed, offset + o * (8 * _ROUNDS + 8))
    k = tl.where(lam == 0, 0.0, k)
    k = tl.where(lam != lam, lam, k)
    tl.store(out + o, k.to(out.dtype.element_ty), mask=m)


@triton.jit
def _binomial_one(count, prob, seed, c):
    """A Binomial(count, prob) draw per lane (float32, prob <= 1/2; the caller flips):
    inversion for count * prob < _SMALL, else BTRS (Hormann 1993)."""
    q = 1.0 - prob
    # inversion: P(0) = q**n, P(k+1) = P(k) * (n - k) / (k + 1) * p / q
    u = tl.rand(seed, c)
    pk = tl.exp(count * tl.log(tl.maximum(q, 1e-30)))
    s = pk
    k_inv = count * 0.0
    ratio = prob / tl.maximum(q, 1e-30)
    for i in range(1, _SEARCH):
        more = (u > s) & (i * 1.0 <= count)
        k_inv = tl.where(more, i * 1.0, k_inv)
        pk = pk * (count - (i - 1)) / i * ratio
        s = tl.where(more, s + pk, s)
    # BTRS for count * prob >= _SMALL
    spq = tl.sqrt(count * prob * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    cc = count * prob + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = tl.log(tl.maximum(prob, 1e-30) / tl.maximum(q, 1e-30))
    mode = tl.floor((count + 1.0) * prob)
    h = _log_factorial(mode) + _log_factorial(tl.maximum(count - mode, 0.0))
    out = mode
    done = count != count
    for r in range(_ROUNDS):
        uu = tl.rand(seed, c + 4 + 8 * r) - 0.5
        vv = tl.rand(seed, c + 8 + 8 * r)
        us = 0.5 - tl.abs(uu)
        k = tl.floor((2.0 * a / us + b) * uu + cc)
        inside = (k >= 0) & (k <= count)
        quick = (us >= 0.07) & (vv <= vr) & inside
        lv = tl.log(vv * alpha / (a / (us * us) + b))
        kk = tl.minimum(tl.maximum(k, 0.0), count)
        rhs = h - _log_factorial(kk) - _log_factorial(count - kk) + (kk - mode) * lpq
        ok = quick | (inside & (lv <= rhs))
        out = tl.where(ok & ~done, k, out)
        done = done | ok
    return tl.where(count * prob < _SMALL, k_inv, out)


@triton.jit(do_not_specialize=["seed", "offset"])
def _binomial_kernel(count, prob, out, n, seed, offset, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    cnt = tl.load(count + o, mask=m, other=0).to(tl.float32)
    p = tl.load(prob + o, mask=m, other=0).to(tl.float32)
    flip = p > 0.5
    pp = tl.where(flip, 1.0 - p, p)
    k = _binomial_one(cnt, pp, seed, offset + o * (8 * _ROUNDS + 8))
    k = tl.where(flip, cnt - k, k)
    k = tl.where((p <= 0) | (cnt <= 0), tl.where(p >= 1, cnt, 0.0), k)
    k = tl.where(p >= 1, cnt, k)
    k = tl.where((p != p) | (cnt != cnt), p + cnt, k)
    tl.store(out + o, k.to(out.dtype.element_ty), mask=m)


def _float_input(name, t):
    if not t.is_floating_point():
        raise RuntimeError(f"torch_ext: {name} expects a floating-point tensor, got {t.dtype}")
    return t.contiguous()


def _launch(kern, name, inputs, out, per, generator, **meta):
    n = out.numel()
    if n == 0:
        return out
    seed, offset, marks = philox_draw(generator, out.device, per * n)
    # The host driver's pointwise block (large: the interpreter's cost is per program);
    # on a GPU 256 lanes of 4 warps, whose rejection loops' state fits the registers.
    block = block_for(n) if spec("pointwise_block", n) else 256
    launch(kern, (cdiv(n, block),), *inputs, out, n, seed, offset, BLOCK=block,
           philox=marks, **meta)  # fmt: skip
    return out


@kernel()
def standard_gamma(self: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    alpha = _float_input("_standard_gamma", self)
    out = torch.empty_like(alpha)
    tiny = float(torch.finfo(self.dtype).tiny)
    return _launch(_gamma_kernel, "gamma", (alpha,), out, 8 * ROUNDS + 4, generator, TINY=tiny)


@kernel()
def sample_dirichlet(self: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Gamma(alpha_i) draws normalised over the last dimension, in float32 or wider."""
    alpha = _float_input("_sample_dirichlet", self)
    acc = torch.float64 if alpha.dtype == torch.float64 else torch.float32
    g = torch.empty(alpha.shape, dtype=acc, device=alpha.device)
    _launch(_gamma_kernel, "gamma", (alpha,), g, 8 * ROUNDS + 4, generator,
            TINY=float(torch.finfo(acc).tiny))  # fmt: skip
    if g.numel() == 0:
        return g.to(alpha.dtype)
    out = (g / g.sum(-1, keepdim=True)).clamp_(min=float(torch.finfo(alpha.dtype).tiny))
    return out.to(alpha.dtype)


@kernel()
def poisson(self: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    rate = _float_input("poisson", self)
    out = torch.empty_like(rate)
    return _launch(_poisson_kernel, "poisson", (rate,), out, 8 * ROUNDS + 8, generator)


@kernel()
def binomial(
    count: torch.Tensor, prob: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    if count.shape != prob.shape:
        raise RuntimeError(
            f"torch_ext: binomial expects count and prob of one shape, got "
            f"{tuple(count.shape)} and {tuple(prob.shape)}"
        )
    cnt, p = _float_input("binomial", count), _float_input("binomial", prob)
    out = torch.empty_like(cnt)
    return _launch(_binomial_kernel, "binomial", (cnt, p), out, 8 * ROUNDS + 8, generator)
