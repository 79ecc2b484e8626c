"""Instance norm's running statistics. aten::instance_norm's autograd kernel for
privateuseone (csrc/aten/InstanceNorm.cpp) normalises through group norm with a group per
channel (two launches each way, group_norm.py), where PyTorch's composite repeats the
weight, bias and running stats over the batch for a batch norm of the (1, N*C) view and
averages the running stats back. With running stats it then calls this kernel once:

  running_mean = (1 - momentum) * running_mean + momentum * mean_n(mean[n, c])
  running_var  = (1 - momentum) * running_var  + momentum * mean_n(var[n, c] * S / (S - 1))

the values the composite leaves (its per-sample running stats, each updated with the
sample's mean and unbiased variance over S = H*W elements, averaged over the batch).
Group norm saves rstd = 1 / sqrt(var + eps): var is 1 / rstd**2 - eps."""

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._declare import kernel
from ._launch import cdiv, launch, next_pow2


@triton.jit
def _running_update_kernel(mean, rstd, rm, rv, N, C, momentum, eps, unbias,
                           ACC: tl.constexpr, BN: tl.constexpr, BC: tl.constexpr):  # fmt: skip
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    cm = c < C
    s_mean = tl.zeros((BC,), ACC)
    s_var = tl.zeros((BC,), ACC)
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        m = (n < N)[:, None] & cm[None, :]
        o = n[:, None].to(tl.int64) * C + c[None, :]
        s_mean += tl.sum(tl.load(mean + o, mask=m, other=0).to(ACC), 0)
        r = tl.load(rstd + o, mask=m, other=1).to(ACC)
        s_var += tl.sum(tl.where(m, (1.0 / (r * r) - eps) * unbias, 0.0), 0)
    old_m = tl.load(rm + c, mask=cm, other=0).to(ACC)
    old_v = tl.load(rv + c, mask=cm, other=0).to(ACC)
    tl.store(rm + c, (old_m * (1.0 - momentum) + s_mean * (momentum / N)).to(rm.dtype.element_ty),
             mask=cm)  # fmt: skip
    tl.store(rv + c, (old_v * (1.0 - momentum) + s_var * (momentum / N)).to(rv.dtype.element_ty),
             mask=cm)  # fmt: skip


@kernel()
def instance_norm_running_update(
    mean: torch.Tensor,
    rstd: torch.Tensor,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
    count: int,
) -> None:
    """torch_ext::instance_norm_running_update: mean and rstd (N, C) from group norm with
    C groups, `count` elements a (sample, channel) (at least 2); the running stats (C,),
    contiguous, updated in place."""
    N, C = mean.shape
    if N == 0 or C == 0:
        return
    bc = min(next_pow2(C), 128)
    bn = min(next_pow2(N), 32)
    launch(
        _running_update_kernel, (cdiv(C, bc),), mean, rstd, running_mean, running_var, N, C,
        float(momentum), float(eps), count / (count - 1.0),
        ACC=tl_float_acc(mean.dtype), BN=bn, BC=bc,
    )  # fmt: skip
