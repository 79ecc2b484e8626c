"""Connectionist temporal classification loss (PyTorch's kernels are CPU/CUDA-specific):

  _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity)
      -> (neg_log_likelihood (N,), log_alpha (N, T, 2 * max_target_length + 1))
  _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths,
      neg_log_likelihood, log_alpha, blank, zero_infinity) -> grad of log_probs

Graves et al.'s recursions over the extended target (blanks around every label):
alpha forwards in time, beta backwards, each a log-sum-exp of up to three states of the
previous step (the skip only between different labels). One program per sequence walks
its time steps; a step's states are one vector, and the shifted states come from the
row just written (log_alpha, or a log_beta buffer). The gradient of eq. (16): for each
(t, c), the log-sum-exp of alpha + beta over the states labelled c, then
exp(lp) - exp(that + nll - lp), scaled by the incoming gradient. Targets are (N, S)
padded or 1-d concatenated, as PyTorch's.
"""

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._declare import kernel
from ._launch import launch, next_pow2


@triton.jit
def _lse3(a, b, c):
    m = tl.maximum(tl.maximum(a, b), c)
    m = tl.where(m == float("-inf"), 0.0, m)
    return tl.log(tl.exp(a - m) + tl.exp(b - m) + tl.exp(c - m)) + m


@triton.jit
def _primes(targets, off, tstride, s, L, BLANK):
    odd = (s % 2) == 1
    lab = tl.load(targets + off + tstride * (s // 2), mask=odd & (s < 2 * L + 1), other=BLANK)
    return tl.where(odd, lab, BLANK).to(tl.int64)


@triton.jit
def _ctc_fwd_kernel(
    lp, targets, tg_off, in_len, tg_len, nll, alpha, tstride, lt, ln, lc, SMAX, T, BLANK,
    ACC: tl.constexpr, BLOCK_S: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0).to(tl.int64)
    Tb = tl.load(in_len + b)
    L = tl.load(tg_len + b)
    off = tl.load(tg_off + b)
    s = tl.arange(0, BLOCK_S)
    valid = s < 2 * L + 1
    prime = _primes(targets, off, tstride, s, L, BLANK)
    prime2 = _primes(targets, off, tstride, s - 2, L, BLANK)
    skip = (s > 1) & (prime != prime2)
    row = alpha + b * T * SMAX
    lpb = lp + b * ln
    first = tl.load(lpb + prime * lc, mask=valid, other=float("-inf")).to(ACC)
    a = tl.where((s == 0) | ((s == 1) & (L > 0)), first, float("-inf"))
    tl.store(row + s, a, mask=s < SMAX)
    for t in range(1, Tb):
        tl.debug_barrier()
        prev = row + (t - 1) * SMAX
        a2 = tl.load(prev + s - 1, mask=valid & (s > 0), other=float("-inf"))
        a3 = tl.load(prev + s - 2, mask=valid & skip, other=float("-inf"))
        x = tl.load(lpb + t * lt + prime * lc, mask=valid, other=0).to(ACC)
        a = tl.where(valid, _lse3(a, a2, a3) + x, float("-inf"))
        tl.store(row + t * SMAX + s, a, mask=s < SMAX)
    l1 = tl.sum(tl.where(s == 2 * L, a, 0.0), 0)
    l2 = tl.sum(tl.where(s == 2 * L - 1, a, 0.0), 0)
    l2 = tl.where(L > 0, l2, float("-inf"))
    ll = _lse3(l1, l2, float("-inf"))
    ll = tl.where(Tb > 0, ll, tl.where(L == 0, 0.0, float("-inf")))
    tl.store(nll + b, -ll)


@triton.jit
def _ctc_bwd_kernel(
    lp, targets, tg_off, in_len, tg_len, nll, alpha, beta, gout, grad, tstride,
    lt, ln, lc, gt, gn, gc, SMAX, T, C, BLANK, ZERO_INF,
    ACC: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_C: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0).to(tl.int64)
    Tb = tl.load(in_len + b)
    L = tl.load(tg_len + b)
    off = tl.load(tg_off + b)
    s = tl.arange(0, BLOCK_S)
    valid = s < 2 * L + 1
    prime = _primes(targets, off, tstride, s, L, BLANK)
    prime2 = _primes(targets, off, tstride, s + 2, L, BLANK)
    skip = (s < 2 * L - 1) & (prime != prime2)
    lpb = lp + b * ln
    arow = alpha + b * T * SMAX
    brow = beta + b * T * SMAX
    last = tl.load(lpb + (Tb - 1) * lt + prime * lc, mask=valid & (s * 0 + Tb > 0), other=0).to(ACC)
    bt = tl.where((s == 2 * L) | ((s == 2 * L - 1) & (L > 0)), last, float("-inf"))
    tl.store(brow + (Tb - 1) * SMAX + s, bt, mask=(s < SMAX) & (s * 0 + Tb > 0))
    for i in range(1, Tb):
        t = Tb - 1 - i
        tl.debug_barrier()
        nxt = brow + (t + 1) * SMAX
        b2 = tl.load(nxt + s + 1, mask=valid & (s < 2 * L), other=float("-inf"))
        b3 = tl.load(nxt + s + 2, mask=valid & skip, other=float("-inf"))
        x = tl.load(lpb + t * lt + prime * lc, mask=valid, other=0).to(ACC)
        bt = tl.where(valid, _lse3(bt, b2, b3) + x, float("-inf"))
        tl.store(brow + t * SMAX + s, bt, mask=s < SMAX)
    tl.debug_barrier()
    z = tl.load(nll + b).to(ACC)
    g = tl.load(gout + b).to(ACC)
    dead = (z == float("inf")) & (ZERO_INF != 0)
    for t in range(0, T):
        live = valid & (s * 0 + t < Tb)
        ab = tl.load(arow + t * SMAX + s, mask=live, other=float("-inf"))
        ab += tl.load(brow + t * SMAX + s, mask=live, other=float("-inf"))
        for c0 in range(0, C, BLOCK_C):
            c = c0 + tl.arange(0, BLOCK_C)
            hit = (prime[:, None] == c[None, :]) & valid[:, None]
            v = tl.where(hit, ab[:, None], float("-inf"))
            m = tl.max(v, 0)
            m0 = tl.where(m == float("-inf"), 0.0, m)
            lcab = tl.log(tl.sum(tl.exp(v - m0[None, :]), 0)) + m0
            x = tl.load(lpb + t * lt + c * lc, mask=c < C, other=0).to(ACC)
            res = (tl.exp(x) - tl.exp(lcab + z - x)) * g
            res = tl.where((t < Tb) & ~dead, res, 0.0)
            tl.store(grad + t * gt + b * gn + c * gc, res.to(grad.dtype.element_ty), mask=c < C)


def _setup(log_probs, targets, input_lengths, target_lengths, blank):
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: log_probs must be 2-d or 3-d, got {log_probs.dim()}-d")
    lp = log_probs if log_probs.dim() == 3 else log_probs.unsqueeze(1)
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if len(input_lengths) != N:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != N:
        raise RuntimeError("target_lengths must be of size batch_size")
    tl_ = [int(v) for v in target_lengths]
    il = [int(v) for v in input_lengths]
    for v in il:
        if v > T or v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {v} (while checking arguments for ctc_loss_cpu)")  # fmt: skip
    tg = targets if targets.dim() != 0 else targets.reshape(1)
    if tg.dim() == 1 and log_probs.dim() == 3:
        offs, acc = [], 0
        for v in tl_:
            offs.append(acc)
            acc += v
        stride = tg.stride(0)
        offs = [o * stride for o in offs]
    else:
        if tg.dim() == 1:
            tg = tg.unsqueeze(0)
        if max(tl_, default=0) > tg.shape[1]:
            raise RuntimeError(f"Expected tensor to have size at least {max(tl_)} at dimension 1, but got size {tg.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_cpu)")  # fmt: skip
        offs, stride = [i * tg.stride(0) for i in range(N)], tg.stride(1)
    dev = log_probs.device
    meta = torch.tensor([il, tl_, offs], dtype=torch.int64).to(dev)
    smax = 2 * max(tl_, default=0) + 1
    return lp, tg, meta, stride, T, N, C, smax


@kernel("ctc_loss")
def ctc_loss(
    log_probs: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: list[int],
    target_lengths: list[int],
    blank: int = 0,
    zero_infinity: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    lp, tg, meta, stride, T, N, C, smax = _setup(log_probs, targets, input_lengths, target_lengths, blank)  # fmt: skip
    nll = torch.empty(N, dtype=log_probs.dtype, device=log_probs.device)
    alpha = torch.full((N, T, smax), float("-inf"), dtype=log_probs.dtype, device=log_probs.device)
    if N:
        launch(
            _ctc_fwd_kernel, (N,), lp, tg, meta[2], meta[0], meta[1], nll, alpha, stride,
            *lp.stride(), smax, T, blank, ACC=tl_float_acc(log_probs.dtype),
            BLOCK_S=next_pow2(smax),
        )  # fmt: skip
    # zero_infinity is the composite's (ctc_loss) to apply; the backward reads the inf
    if log_probs.dim() == 2:
        return nll.reshape(()), alpha[0]
    return nll, alpha


@kernel("ctc_loss_backward")
def ctc_loss_backward(
    grad: torch.Tensor,
    log_probs: torch.Tensor,
    targets: torch.Tensor,
    input_lengths: list[int],
    target_lengths: list[int],
    neg_log_likelihood: torch.Tensor,
    log_alpha: torch.Tensor,
    blank: int,
    zero_infinity: bool = False,
) -> torch.Tensor:
    lp, tg, meta, stride, T, N, C, smax = _setup(log_probs, targets, input_lengths, target_lengths, blank)  # fmt: skip
    out = torch.empty(lp.shape, dtype=log_probs.dtype, device=log_probs.device)
    if N and T and C:
        alpha = log_alpha.reshape(N, T, -1).contiguous()
        beta = torch.full(alpha.shape, float("-inf"), dtype=alpha.dtype, device=alpha.device)
        launch(
            _ctc_bwd_kernel, (N,), lp, tg, meta[2], meta[0], meta[1],
            neg_log_likelihood.reshape(N).contiguous(), alpha, beta,
            grad.reshape(N).contiguous(), out, stride, *lp.stride(), *out.stride(),
            alpha.shape[-1], T, C, blank, int(bool(zero_infinity)),
            ACC=tl_float_acc(log_probs.dtype), BLOCK_S=next_pow2(alpha.shape[-1]),
            BLOCK_C=min(next_pow2(C), 64),
        )  # fmt: skip
    elif out.numel():
        out.zero_()
    return out.reshape(log_probs.shape)
