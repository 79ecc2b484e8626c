"""Fused operators of our own library, `torch.ops.torch_ext.*`, with autograd.

The operators are declared in musa_functions.yaml (`torch_ext::name(schema)`),
computed by the Triton kernels of torch_ext/ops/fused.py and norm.py, and get
their Meta kernels from the `*_fake` functions below (FakeTensor,
torch.compile). Their backward is registered here, so they train:

    y = torch_ext.fused.silu_and_mul(x)            # silu(x[..., :d]) * x[..., d:]
    out, new_residual = torch_ext.fused.fused_add_rms_norm(x, residual, w, 1e-6)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch
from torch import Tensor

from torch_ext.ops._common import stat_dtype
from torch_ext.ops.normalization import rms_norm_fwd

ops = torch.ops.torch_ext


def _stat_shape(x: Tensor, normalized_shape: Sequence[int]) -> list[int]:
    axis = x.dim() - len(normalized_shape)
    return list(x.shape[:axis]) + [1] * len(normalized_shape)


# ---- Meta kernels (named by `fake:` in the manifest) -----------------------
# The Triton kernels write contiguous outputs whatever the input's strides, so
# the fakes must too: torch.compile plans views on these strides.
def _like(t: Tensor) -> Tensor:
    return torch.empty_like(t, memory_format=torch.contiguous_format)


def rms_norm_fake(
    input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor], eps: Optional[float]
) -> tuple[Tensor, Tensor]:
    return (
        _like(input),
        input.new_empty(_stat_shape(input, normalized_shape), dtype=stat_dtype(input.dtype)),
    )


def rms_norm_backward_fake(
    grad_out: Tensor,
    input: Tensor,
    normalized_shape: Sequence[int],
    rstd: Tensor,
    weight: Optional[Tensor],
    output_mask: Sequence[bool],
) -> tuple[Optional[Tensor], Optional[Tensor]]:
    dw = _like(weight) if weight is not None and output_mask[1] else None
    return _like(input) if output_mask[0] else None, dw


def instance_norm_running_update_fake(
    mean: Tensor,
    rstd: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    momentum: float,
    eps: float,
    count: int,
) -> None:
    return None


def cross_entropy_fake(
    input: Tensor, target: Tensor, reduction: int, ignore_index: int
) -> tuple[Tensor, Tensor, Tensor]:
    n = input.shape[0]
    if reduction == 0:
        loss = input.new_empty((n,))
    else:
        loss = input.new_empty(())
    return (
        loss,
        input.new_empty((n,), dtype=torch.float32),
        input.new_empty((), dtype=torch.float32),
    )


def cross_entropy_backward_fake(
    grad_out: Tensor,
    input: Tensor,
    target: Tensor,
    lse: Tensor,
    count: Tensor,
    reduction: int,
    ignore_index: int,
) -> Tensor:
    return _like(input)


def skip_layer_norm_fake(
    x: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int],
    weight: Optional[Tensor],
    bias: Optional[Tensor],
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    stat = x.new_empty(_stat_shape(x, normalized_shape), dtype=stat_dtype(x.dtype))
    return _like(x), stat, _like(stat)


def skip_rms_norm_fake(
    x: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int],
    weight: Optional[Tensor],
    eps: Optional[float],
) -> tuple[Tensor, Tensor]:
    return rms_norm_fake(x, normalized_shape, weight, eps)


def fused_add_rms_norm_fake(
    x: Tensor,
    residual: Tensor,
    normalized_shape: Sequence[int],
    weight: Optional[Tensor],
    eps: Optional[float],
) -> tuple[Tensor, Tensor]:
    return _like(x), _like(x)


def and_mul_fake(x: Tensor, *args: Any) -> Tensor:
    return x.new_empty(list(x.shape[:-1]) + [x.shape[-1] // 2])


def and_mul_backward_fake(grad: Tensor, x: Tensor, *args: Any) -> Tensor:
    return _like(x)


def rotary_embedding_fake(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False) -> Tensor:
    return _like(x)


# ---- aten::rms_norm through the fused kernel --------------------------------
# PyTorch's rms_norm is CompositeImplicitAutograd: it decomposes into five
# pointwise/reduction ops. The manifest registers the fused forward for
# PrivateUse1 (kernel below); a backend kernel for a composite op also needs
# its autograd kernel: csrc/aten/RmsNorm.cpp (C++, so a call runs no Python).
def aten_rms_norm(
    input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor], eps: Optional[float]
) -> Tensor:
    return rms_norm_fwd(input, normalized_shape, weight, eps)[0]


# ---- Python helpers ---------------------------------------------------------
def rms_norm(x: Tensor, weight: Optional[Tensor] = None, eps: Optional[float] = None) -> Tensor:
    """RMS norm over the last dimension(s) of weight's shape (or the last one)."""
    shape = list(weight.shape) if weight is not None else [x.shape[-1]]
    return ops.rms_norm(x, shape, weight, eps)[0]


def skip_layer_norm(
    x: Tensor,
    residual: Tensor,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
    eps: float = 1e-5,
) -> Tensor:
    """layer_norm(x + residual) over the last dimension, in one pass."""
    shape = list(weight.shape) if weight is not None else [x.shape[-1]]
    return ops.skip_layer_norm(x, residual, shape, weight, bias, eps)[0]


def skip_rms_norm(
    x: Tensor, residual: Tensor, weight: Optional[Tensor] = None, eps: float = 1e-6
) -> Tensor:
    """rms_norm(x + residual) over the last dimension, in one pass."""
    shape = list(weight.shape) if weight is not None else [x.shape[-1]]
    return ops.skip_rms_norm(x, residual, shape, weight, eps)[0]


def fused_add_rms_norm(
    x: Tensor, residual: Tensor, weight: Optional[Tensor] = None, eps: float = 1e-6
) -> tuple[Tensor, Tensor]:
    """(rms_norm(x + residual), x + residual): the sum is the next residual."""
    shape = list(weight.shape) if weight is not None else [x.shape[-1]]
    return ops.fused_add_rms_norm(x, residual, shape, weight, eps)


def gelu_and_mul(x: Tensor, approximate: str = "none") -> Tensor:
    return ops.gelu_and_mul(x, approximate)


def silu_and_mul(x: Tensor) -> Tensor:
    return ops.silu_and_mul(x)


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False) -> Tensor:
    return ops.rotary_embedding(x, cos, sin, interleaved)


# ---- Autograd ---------------------------------------------------------------


def register_autograd() -> None:
    """Called by `import torch_ext` once the operators exist."""
    reg = torch.library.register_autograd

    def rms_setup(ctx, inputs, output):
        x, shape, weight, _ = inputs
        ctx.save_for_backward(x, weight, output[1])
        ctx.shape = shape

    def rms_backward(ctx, grad_out, _grad_rstd):
        x, weight, rstd = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[2]]
        dx, dw = ops.rms_norm_backward(grad_out, x, ctx.shape, rstd, weight, mask)
        return dx, None, dw, None

    reg("torch_ext::rms_norm", rms_backward, setup_context=rms_setup)

    def skip_rms_setup(ctx, inputs, output):
        x, residual, shape, weight, _ = inputs
        ctx.save_for_backward(x, residual, weight, output[1])
        ctx.shape = shape

    def skip_rms_backward(ctx, grad_out, _grad_rstd):
        x, residual, weight, rstd = ctx.saved_tensors
        mask = [True, weight is not None and ctx.needs_input_grad[3]]
        dx, dw = ops.rms_norm_backward(grad_out, x + residual, ctx.shape, rstd, weight, mask)
        return dx, dx, None, dw, None

    reg("torch_ext::skip_rms_norm", skip_rms_backward, setup_context=skip_rms_setup)

    def add_rms_setup(ctx, inputs, output):
        x, residual, shape, weight, eps = inputs
        ctx.save_for_backward(output[1], weight)
        ctx.shape, ctx.eps = shape, eps

    def add_rms_backward(ctx, grad_out, grad_sum):
        s, weight = ctx.saved_tensors
        _, rstd = ops.rms_norm(s, ctx.shape, weight, ctx.eps)
        mask = [True, weight is not None and ctx.needs_input_grad[3]]
        dx, dw = ops.rms_norm_backward(grad_out, s, ctx.shape, rstd, weight, mask)
        if grad_sum is not None:
            dx = dx + grad_sum
        return dx, dx, None, dw, None

    reg("torch_ext::fused_add_rms_norm", add_rms_backward, setup_context=add_rms_setup)

    def skip_ln_setup(ctx, inputs, output):
        x, residual, shape, weight, bias, _ = inputs
        ctx.save_for_backward(x, residual, weight, bias, output[1], output[2])
        ctx.shape = shape

    def skip_ln_backward(ctx, grad_out, _gm, _gr):
        x, residual, weight, bias, mean, rstd = ctx.saved_tensors
        mask = [
            True,
            weight is not None and ctx.needs_input_grad[3],
            bias is not None and ctx.needs_input_grad[4],
        ]
        dx, dw, db = torch.ops.aten.native_layer_norm_backward(
            grad_out, x + residual, ctx.shape, mean, rstd, weight, bias, mask
        )
        return dx, dx, None, dw, db, None

    reg("torch_ext::skip_layer_norm", skip_ln_backward, setup_context=skip_ln_setup)

    def x_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.rest = inputs[1:]

    def gelu_mul_backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return ops.gelu_and_mul_backward(grad, x, ctx.rest[0]), None

    def silu_mul_backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return ops.silu_and_mul_backward(grad, x)

    reg("torch_ext::gelu_and_mul", gelu_mul_backward, setup_context=x_setup)
    reg("torch_ext::silu_and_mul", silu_mul_backward, setup_context=x_setup)

    def rope_setup(ctx, inputs, output):
        x, cos, sin, interleaved = inputs
        ctx.save_for_backward(cos, sin)
        ctx.interleaved = interleaved

    def rope_backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return ops.rotary_embedding_backward(grad, cos, sin, ctx.interleaved), None, None, None

    reg("torch_ext::rotary_embedding", rope_backward, setup_context=rope_setup)
