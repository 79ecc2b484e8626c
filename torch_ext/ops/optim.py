"""Optimiser step: _fused_adamw_ (plain, convention (3), in place).

  _fused_adamw_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad,
                maximize, grad_scale?, found_inf?)
lr may be a number or a tensor (the .tensor_lr overload).  The state steps
have already been incremented by torch.optim (as for CUDA's fused kernel).
"""

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._launch import cdiv, launch
from ._common import block_for
from ._declare import kernel


@triton.jit
def _adamw_kernel(
    p,
    g,
    m,
    v,
    vmax,
    step_ptr,
    lr_ptr,
    grad_scale,
    found_inf,
    n,
    lr,
    beta1,
    beta2,
    weight_decay,
    eps,
    AMSGRAD: tl.constexpr,
    MAXIMIZE: tl.constexpr,
    LR_TENSOR: tl.constexpr,
    HAS_SCALE: tl.constexpr,
    HAS_INF: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    if HAS_INF:
        mask = mask & (tl.load(found_inf + o * 0, mask=mask, other=0) == 0)
    step = tl.load(step_ptr + o * 0, mask=mask, other=1).to(ACC)
    if LR_TENSOR:
        lr_v = tl.load(lr_ptr + o * 0, mask=mask, other=0).to(ACC)
    else:
        lr_v = lr
    pv = tl.load(p + o, mask=mask, other=0).to(ACC)
    gv = tl.load(g + o, mask=mask, other=0).to(ACC)
    if HAS_SCALE:
        gv = gv / tl.load(grad_scale + o * 0, mask=mask, other=1).to(ACC)
    if MAXIMIZE:
        gv = -gv
    mv = tl.load(m + o, mask=mask, other=0).to(ACC)
    vv = tl.load(v + o, mask=mask, other=0).to(ACC)
    pv = pv * (1.0 - lr_v * weight_decay)
    mv = mv + (1.0 - beta1) * (gv - mv)
    vv = beta2 * vv + (1.0 - beta2) * gv * gv
    bc1 = 1.0 - tl.exp(step * tl.log(beta1))
    bc2 = 1.0 - tl.exp(step * tl.log(beta2))
    if AMSGRAD:
        vm = tl.maximum(tl.load(vmax + o, mask=mask, other=0).to(ACC), vv)
        tl.store(vmax + o, vm.to(vmax.dtype.element_ty), mask=mask)
        denom = tl.sqrt(vm) / tl.sqrt(bc2) + eps
    else:
        denom = tl.sqrt(vv) / tl.sqrt(bc2) + eps
    pv = pv - (lr_v / bc1) * mv / denom
    tl.store(p + o, pv.to(p.dtype.element_ty), mask=mask)
    tl.store(m + o, mv.to(m.dtype.element_ty), mask=mask)
    tl.store(v + o, vv.to(v.dtype.element_ty), mask=mask)


@kernel("_fused_adamw_")
def fused_adamw_(
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
    grad_scale=None,
    found_inf=None,
):
    lr_tensor = isinstance(lr, torch.Tensor)
    for i, p in enumerate(self):
        n = p.numel()
        if n == 0:
            continue
        for t in (p, grads[i], exp_avgs[i], exp_avg_sqs[i]):
            if not t.is_contiguous():
                raise NotImplementedError("torch_ext: _fused_adamw_ needs contiguous tensors")
        vmax = max_exp_avg_sqs[i] if amsgrad else p
        block = block_for(n)
        launch(
            _adamw_kernel,
            (cdiv(n, block),),
            p,
            grads[i],
            exp_avgs[i],
            exp_avg_sqs[i],
            vmax,
            state_steps[i],
            lr if lr_tensor else p,
            grad_scale if grad_scale is not None else p,
            found_inf if found_inf is not None else p,
            n,
            0.0 if lr_tensor else float(lr),
            float(beta1),
            float(beta2),
            float(weight_decay),
            float(eps),
            AMSGRAD=bool(amsgrad),
            MAXIMIZE=bool(maximize),
            LR_TENSOR=lr_tensor,
            HAS_SCALE=grad_scale is not None,
            HAS_INF=found_inf is not None,
            ACC=tl_float_acc(p.dtype),
            BLOCK=block,
        )
