"""Fused optimiser steps and AMP's gradient checks, multi-tensor (as many
tensors per launch as torch's CUDA kernels take, _multi_tensor.py): plain ops, convention (3), in place.

  _fused_adam_ / _fused_adamw_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
      state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
      grad_scale?, found_inf?)
  _fused_sgd_(self, grads, momentum_buffer_list, weight_decay, momentum, lr,
      dampening, nesterov, maximize, is_first_step, grad_scale?, found_inf?)
  _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale)
  _amp_update_scale_(self, growth_tracker, found_inf, growth_factor,
      backoff_factor, growth_interval)

lr may be a number or a 0-dim tensor (the .tensor_lr overloads). The state
steps have already been incremented by torch.optim (as for CUDA's fused
kernels); a set found_inf skips the whole step, read on the device. With
grad_scale the unscaled gradients are written back, as CUDA's kernels do.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ._launch import call_numbers, launch
from ._multi_tensor import (
    chunks,
    module_source,
    signature,
    slot_select,
    slots_for,
    acc_dtype,
    run_pointwise,
    chunk_loop,
    slot_args,
)
from ._declare import kernel
from ._pointwise import load_generated

_HERE = __name__


@triton.jit
def adam_body(
    p,
    g,
    m,
    v,
    vmax,
    step,
    lr,
    gscale,
    beta1,
    beta2,
    weight_decay,
    eps,
    AMSGRAD: tl.constexpr,
    MAXIMIZE: tl.constexpr,
    ADAMW: tl.constexpr,
    HAS_SCALE: tl.constexpr,
):
    if HAS_SCALE:
        g = g / gscale
    g_store = g
    if MAXIMIZE:
        g = -g
    if ADAMW:
        p = p * (1.0 - lr * weight_decay)
    else:
        g = g + p * weight_decay
    m = m + (1.0 - beta1) * (g - m)
    v = beta2 * v + (1.0 - beta2) * g * g
    bc1 = 1.0 - tl.exp(step * tl.log(beta1))
    bc2_sqrt = tl.sqrt(1.0 - tl.exp(step * tl.log(beta2)))
    if AMSGRAD:
        vmax = tl.maximum(vmax, v)
        denom = tl.sqrt(vmax) / bc2_sqrt + eps
    else:
        denom = tl.sqrt(v) / bc2_sqrt + eps
    p = p - (lr / bc1) * m / denom
    return p, g_store, m, v, vmax


def _check_lists(op, *lists):
    n = len(lists[0])
    for lst in lists[1:]:
        if len(lst) != n:
            raise ValueError(
                f"torch_ext: {op}: the tensor lists must have one length, got {n} and {len(lst)}"
            )
    device = lists[0][0].device if n else None
    for k, lst in enumerate(lists):
        for i, t in enumerate(lst):
            if t.device != device:
                raise RuntimeError(
                    f"torch_ext: {op}: all tensors must be on one device ({device}), "
                    f"but tensor {i} of list {k} is on {t.device}"
                )
            if not t.is_contiguous():
                raise NotImplementedError(f"torch_ext: {op} needs contiguous tensors")
    return n


def _groups(params):
    """Indices of the tensors by dtype (one launch series per dtype)."""
    groups = {}
    for i, p in enumerate(params):
        groups.setdefault(p.dtype, []).append(i)
    return groups.items()


def _pick(lst, idx):
    return [lst[i] for i in idx]


def _fused_adam(
    op,
    adamw,
    self,
    grads,
    exp_avgs,
    exp_avg_sqs,
    max_exp_avg_sqs,
    state_steps,
    lr,
    beta1,
    beta2,
    weight_decay,
    eps,
    amsgrad,
    maximize,
    grad_scale,
    found_inf,
):
    lists = [self, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
    n = _check_lists(op, *lists)
    if len(state_steps) != n:
        raise ValueError(f"torch_ext: {op}: expected {n} state steps, got {len(state_steps)}")
    lr_tensor = isinstance(lr, torch.Tensor)
    for dtype, idx in _groups(self):
        kinds = "LLLL" + ("L" if amsgrad else "S") + "Q" + ("T" if lr_tensor else "S")
        kinds += "T" if grad_scale is not None else "S"
        # lr a per-call number (argument 6): a schedule changes it every step
        common = ([] if amsgrad else [0.0]) + [lr if lr_tensor else call_numbers(float(lr), 6)]
        common.append(grad_scale if grad_scale is not None else 1.0)
        has_scale = grad_scale is not None
        run_pointwise(
            f"{_HERE}:adam_body",
            kinds,
            [_pick(lst, idx) for lst in lists],
            (0, 1 if has_scale else None, 2, 3, 4 if amsgrad else None),
            common=common,
            per_slot_tensors=[_pick(state_steps, idx)],
            extras=(float(beta1), float(beta2), float(weight_decay), float(eps)),
            acc=acc_dtype(dtype),
            skip=found_inf,
            body_constexprs=(
                ("AMSGRAD", bool(amsgrad)),
                ("MAXIMIZE", bool(maximize)),
                ("ADAMW", bool(adamw)),
                ("HAS_SCALE", has_scale),
            ),
        )


@kernel("_fused_adamw_", numbers=(6,))
def fused_adamw_(
    self: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    max_exp_avg_sqs: list[torch.Tensor],
    state_steps: list[torch.Tensor],
    lr: torch.Tensor | float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    grad_scale: torch.Tensor | None = None,
    found_inf: torch.Tensor | None = None,
) -> None:
    _fused_adam(
        "_fused_adamw_",
        True,
        self,
        grads,
        exp_avgs,
        exp_avg_sqs,
        max_exp_avg_sqs,
        state_steps,
        lr,
        beta1,
        beta2,
        weight_decay,
        eps,
        amsgrad,
        maximize,
        grad_scale,
        found_inf,
    )


@kernel("_fused_adam_", numbers=(6,))
def fused_adam_(
    self: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    max_exp_avg_sqs: list[torch.Tensor],
    state_steps: list[torch.Tensor],
    lr: torch.Tensor | float,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    grad_scale: torch.Tensor | None = None,
    found_inf: torch.Tensor | None = None,
) -> None:
    _fused_adam(
        "_fused_adam_",
        False,
        self,
        grads,
        exp_avgs,
        exp_avg_sqs,
        max_exp_avg_sqs,
        state_steps,
        lr,
        beta1,
        beta2,
        weight_decay,
        eps,
        amsgrad,
        maximize,
        grad_scale,
        found_inf,
    )


@triton.jit
def sgd_body(
    p,
    g,
    buf,
    lr,
    gscale,
    weight_decay,
    momentum,
    dampening,
    NESTEROV: tl.constexpr,
    MAXIMIZE: tl.constexpr,
    FIRST: tl.constexpr,
    HAS_SCALE: tl.constexpr,
    HAS_MOMENTUM: tl.constexpr,
):
    if HAS_SCALE:
        g = g / gscale
    g_store = g
    if MAXIMIZE:
        g = -g
    g = g + p * weight_decay
    if HAS_MOMENTUM:
        if FIRST:
            buf = g
        else:
            buf = buf * momentum + (1.0 - dampening) * g
        if NESTEROV:
            g = g + momentum * buf
        else:
            g = buf
    p = p - lr * g
    return p, g_store, buf


@kernel("_fused_sgd_", numbers=(5,))
def fused_sgd_(
    self: list[torch.Tensor],
    grads: list[torch.Tensor],
    momentum_buffer_list: list[torch.Tensor],
    weight_decay: float,
    momentum: float,
    lr: torch.Tensor | float,
    dampening: float,
    nesterov: bool,
    maximize: bool,
    is_first_step: bool,
    grad_scale: torch.Tensor | None = None,
    found_inf: torch.Tensor | None = None,
) -> None:
    op = "_fused_sgd_"
    has_momentum = momentum != 0
    lists = [self, grads] + ([momentum_buffer_list] if has_momentum else [])
    _check_lists(op, *lists)
    lr_tensor = isinstance(lr, torch.Tensor)
    has_scale = grad_scale is not None
    for dtype, idx in _groups(self):
        kinds = "LL" + ("L" if has_momentum else "S") + ("T" if lr_tensor else "S")
        kinds += "T" if has_scale else "S"
        # lr a per-call number (argument 5)
        common = ([] if has_momentum else [0.0]) + [lr if lr_tensor else call_numbers(float(lr), 5)]
        common.append(grad_scale if has_scale else 1.0)
        run_pointwise(
            f"{_HERE}:sgd_body",
            kinds,
            [_pick(lst, idx) for lst in lists],
            (0, 1 if has_scale else None, 2 if has_momentum else None),
            common=common,
            extras=(float(weight_decay), float(momentum), float(dampening)),
            acc=acc_dtype(dtype),
            skip=found_inf,
            body_constexprs=(
                ("NESTEROV", bool(nesterov)),
                ("MAXIMIZE", bool(maximize)),
                ("FIRST", bool(is_first_step)),
                ("HAS_SCALE", has_scale),
                ("HAS_MOMENTUM", has_momentum),
            ),
        )


# ---- AMP -------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _unscale_kernel(k):
    params, no_spec = signature(["l0"], ["found", "inv"], k, ["BLOCK", "ITERS"])
    lines = slot_select(["l0"], k) + chunk_loop(
        [
            "x = tl.load(sel_l0 + offs, mask=mask, other=0)",
            "if x.dtype != tl.float64:",
            "    x = x.to(tl.float32)",
            "bad = mask & ((x != x) | (tl.abs(x) == float('inf')))",
            "s = tl.load(inv + offs * 0, mask=mask, other=1)",
            "tl.store(sel_l0 + offs, (x * s).to(sel_l0.dtype.element_ty), mask=mask)",
            "tl.store(found + offs * 0, tl.full(offs.shape, 1.0, tl.float32), mask=bad)",
        ]
    )
    src = module_source("", "", "multi_tensor_amp_unscale", params, no_spec, lines)
    return load_generated(src, "amp_unscale").multi_tensor_amp_unscale


def _check_scalar(op, name, t, device):
    if t.numel() != 1 or t.dtype != torch.float32 or t.device != device:
        raise RuntimeError(
            f"torch_ext: {op}: {name} must be a one-element float32 tensor on {device}, "
            f"got {t.dtype} with {t.numel()} elements on {t.device}"
        )


@kernel("_amp_foreach_non_finite_check_and_unscale_")
def amp_foreach_non_finite_check_and_unscale_(
    self: list[torch.Tensor],
    found_inf: torch.Tensor,
    inv_scale: torch.Tensor,
) -> None:
    """Multiplies each tensor by inv_scale; sets found_inf to 1 where any value
    is inf or NaN (read before scaling)."""
    op = "_amp_foreach_non_finite_check_and_unscale_"
    if len(self) == 0:
        return
    device = found_inf.device
    _check_scalar(op, "found_inf", found_inf, device)
    _check_scalar(op, "inv_scale", inv_scale, device)
    k = slots_for(1, len(self))
    kern = _unscale_kernel(k)
    for t in self:
        if t.device != device:
            raise RuntimeError(
                f"torch_ext: {op}: a gradient is on {t.device}, found_inf on {device}"
            )
        if not t.is_floating_point():
            raise RuntimeError(f"torch_ext: {op}: gradients must be floating point, got {t.dtype}")
    for _, idx in _groups(self):
        ts = [self[i] for i in idx]
        dense = [t if t.is_contiguous() else t.contiguous() for t in ts]
        for chunk in chunks(len(dense), k):
            args, sizes, starts, meta, total = slot_args([dense], chunk, k)
            if total:
                launch(kern, (total,), *args, *sizes, *starts, found_inf, inv_scale, **meta)
        for t, d in zip(ts, dense):
            if t is not d:
                t.copy_(d)


@triton.jit(do_not_specialize=["interval"])
def _update_scale_kernel(scale, tracker, found_inf, growth, backoff, interval):
    s = tl.load(scale)
    t = tl.load(tracker)
    inf = tl.load(found_inf) != 0
    successful = t + 1
    grown = s * growth
    grow = successful == interval
    finite = (grown == grown) & (tl.abs(grown) != float("inf"))
    new_s = tl.where(inf, s * backoff, tl.where(grow & finite, grown, s))
    new_t = tl.where(inf | grow, 0, successful)
    tl.store(scale, new_s)
    tl.store(tracker, new_t.to(tracker.dtype.element_ty))


@kernel("_amp_update_scale_")
def amp_update_scale_(
    self: torch.Tensor,
    growth_tracker: torch.Tensor,
    found_inf: torch.Tensor,
    growth_factor: float,
    backoff_factor: float,
    growth_interval: int,
) -> torch.Tensor:
    """GradScaler's scale update, on the device: back off after an inf/NaN step,
    grow after growth_interval clean steps."""
    op = "_amp_update_scale_"
    device = self.device
    _check_scalar(op, "the scale", self, device)
    _check_scalar(op, "found_inf", found_inf, device)
    if growth_tracker.numel() != 1 or growth_tracker.dtype != torch.int32:
        raise RuntimeError(f"torch_ext: {op}: growth_tracker must be a one-element int32 tensor")
    launch(
        _update_scale_kernel,
        (1,),
        self,
        growth_tracker,
        found_inf,
        float(growth_factor),
        float(backoff_factor),
        int(growth_interval),
    )
    return self
