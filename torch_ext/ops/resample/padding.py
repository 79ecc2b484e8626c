"""Reflection and replication padding, 1-d to 3-d (+ backward)."""

import torch
import triton
import triton.language as tl

from .._launch import launch
from .._common import dense_out, spatial3, split4, write_back
from ..copy import copy_kernel
from .._common import contiguous
from .._declare import kernel
from .._common import zeroed_accumulator, grid_for, alert_not_deterministic

# -- reflection / replication padding, 1-d to 3-d ---------------------------------
#   reflection_pad{1,3}d.out, replication_pad{1,2,3}d.out impls: (self, padding, out)
#   reflection_pad{1,3}d_backward.grad_input, replication_pad1d_backward.grad_input impls:
#       (grad_output, self, padding, grad_input)                             (structured)
#   reflection_pad2d(self, padding) / .out(self, padding, out)               (plain)
#   reflection_pad2d_backward, replication_pad{2,3}d_backward(grad_output, self, padding)
#       and their .grad_input(..., grad_input)                               (plain)
# Padding lists (left, right, top, bottom, front, back).  Output o of a
# dimension padded by (before, after) reads input i = o - before, reflected
# (i < 0: -i; i >= I: 2(I-1) - i) or clamped into [0, I-1]; negative padding
# crops.  The backward adds each grad_output element into its source.


@triton.jit
def _pad_src(o, before, size, REFLECT: tl.constexpr):
    i = o - before
    if REFLECT:
        i = tl.where(i < 0, -i, i)
        i = tl.where(i >= size, 2 * (size - 1) - i, i)
    else:
        i = tl.minimum(tl.maximum(i, 0), size - 1)
    return i


@triton.jit
def _pad_kernel(
    x,
    out,
    total,
    D,
    H,
    W,
    OD,
    OH,
    OW,
    front,
    top,
    left,
    REFLECT: tl.constexpr,
    BACKWARD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = split4(e, OD, OH, OW)
    src = (
        (plane * D + _pad_src(od, front, D, REFLECT)) * H + _pad_src(oh, top, H, REFLECT)
    ) * W + _pad_src(ow, left, W, REFLECT)
    if BACKWARD:  # x: grad_output (by output element), out: float32/64 grad_input
        v = tl.load(x + e, mask=mask, other=0).to(out.dtype.element_ty)
        tl.atomic_add(out + src, v, mask=mask)
    else:
        tl.store(out + e, tl.load(x + src, mask=mask, other=0), mask=mask)


def _pad_args(in_shape, out_shape, padding):
    """(D, H, W, OD, OH, OW, front, top, left) of a padding of len(padding)//2 dims."""
    nsp = len(padding) // 2
    p = [int(v) for v in padding] + [0] * (6 - len(padding))
    return (*spatial3(in_shape, nsp), *spatial3(out_shape, nsp), p[4], p[2], p[0])


def _padded_shape(shape, padding):
    nsp = len(padding) // 2
    lead = list(shape[: len(shape) - nsp])
    # padding runs from the last dim: (left, right) of W first
    sp = [shape[len(shape) - 1 - k] + padding[2 * k] + padding[2 * k + 1] for k in range(nsp)]
    return lead + sp[::-1]


def _pad(self, padding, out, reflect):
    x = contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = dense_out(out)
    grid, block = grid_for(total)
    launch(
        _pad_kernel,
        grid,
        x,
        o_t,
        total,
        *_pad_args(x.shape, out.shape, padding),
        REFLECT=reflect,
        BACKWARD=False,
        BLOCK=block,
    )
    write_back(out, o_t)


def _pad_backward(grad_output, padding, grad_input, reflect):
    if reflect:  # replication padding's backward is deterministic on CUDA: not alerted
        alert_not_deterministic(f"reflection_pad{len(padding) // 2}d_backward_out_privateuseone")
    g = contiguous(grad_output)
    acc = zeroed_accumulator(grad_input)
    total = g.numel()
    if total:
        grid, block = grid_for(total)
        launch(
            _pad_kernel,
            grid,
            g,
            acc,
            total,
            *_pad_args(grad_input.shape, g.shape, padding),
            REFLECT=reflect,
            BACKWARD=True,
            BLOCK=block,
        )
    copy_kernel((grad_input,), (acc,))


def _check_pad(name, x, padding, nsp, reflect):
    """PyTorch's checks of a plain padding op (its meta's for the structured ones)."""
    if len(padding) != 2 * nsp:
        raise RuntimeError(f"{name}: padding size is expected to be {2 * nsp}, got {len(padding)}")
    if not (
        x.dim() in (nsp + 1, nsp + 2)
        and all(s != 0 for s in (x.shape if x.dim() == nsp + 1 else x.shape[1:]))
    ):
        raise RuntimeError(
            f"{name}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with "
            "possibly 0 batch size and other non-zero dimensions for input, but got: "
            f"{list(x.shape)}"
        )
    for k in range(nsp):
        d = x.dim() - 1 - k
        before, after = padding[2 * k], padding[2 * k + 1]
        if reflect and not (before < x.shape[d] and after < x.shape[d]):
            raise RuntimeError(
                f"{name}: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({before}, {after}) at dimension {d} "
                f"of input {list(x.shape)}"
            )
    out = _padded_shape(x.shape, padding)
    if any(o < 1 for o in out[x.dim() - nsp :]):
        raise RuntimeError(
            f"{name}: input {list(x.shape)} is too small for padding "
            f"{list(padding)}: calculated output {out}"
        )


def _check_pad_grad(name, grad_output, x, padding):
    expected = _padded_shape(x.shape, padding)
    if list(grad_output.shape) != expected:
        raise RuntimeError(
            f"{name}: grad_output of shape {list(grad_output.shape)} does not match "
            f"the padded input's shape {expected}"
        )
    if grad_output.dtype != x.dtype:
        raise RuntimeError(
            f"{name}: expected dtype {x.dtype} for `grad_output` but got dtype {grad_output.dtype}"
        )


@kernel()
def reflection_pad2d_out(self: torch.Tensor, padding: list[int], out: torch.Tensor) -> torch.Tensor:
    _check_pad("reflection_pad2d", self, padding, 2, True)
    out.resize_(_padded_shape(self.shape, padding))  # a plain out= op sizes its own out
    _pad(self, padding, out, True)
    return out


@kernel()
def reflection_pad2d(self: torch.Tensor, padding: list[int]) -> torch.Tensor:
    _check_pad("reflection_pad2d", self, padding, 2, True)
    out = torch.empty(_padded_shape(self.shape, padding), dtype=self.dtype, device=self.device)
    _pad(self, padding, out, True)
    return out


def _plain_pad_backward_fns(name, nsp, reflect):
    def backward(grad_output: torch.Tensor, self: torch.Tensor, padding: list[int]) -> torch.Tensor:
        _check_pad(name, self, padding, nsp, reflect)
        _check_pad_grad(name, grad_output, self, padding)
        grad_input = torch.empty(self.shape, dtype=self.dtype, device=self.device)
        _pad_backward(grad_output, padding, grad_input, reflect)
        return grad_input

    def backward_out(
        grad_output: torch.Tensor, self: torch.Tensor, padding: list[int], grad_input: torch.Tensor
    ) -> torch.Tensor:
        _check_pad(name, self, padding, nsp, reflect)
        _check_pad_grad(name, grad_output, self, padding)
        grad_input.resize_(self.shape)  # a plain out= op sizes its own out
        _pad_backward(grad_output, padding, grad_input, reflect)
        return grad_input

    return backward, backward_out


def _structured_pad_fns(reflect):
    def forward_out(self: torch.Tensor, padding: list[int], out: torch.Tensor) -> None:
        _pad(self, padding, out, reflect)

    def backward_out(
        grad_output: torch.Tensor, self: torch.Tensor, padding: list[int], grad_input: torch.Tensor
    ) -> None:
        _pad_backward(grad_output, padding, grad_input, reflect)

    return forward_out, backward_out


_refl2_bwd, _refl2_bwd_out = _plain_pad_backward_fns("reflection_pad2d_backward", 2, True)
_repl2_bwd, _repl2_bwd_out = _plain_pad_backward_fns("replication_pad2d_backward", 2, False)
_repl3_bwd, _repl3_bwd_out = _plain_pad_backward_fns("replication_pad3d_backward", 3, False)
kernel("reflection_pad2d_backward")(_refl2_bwd)
kernel("reflection_pad2d_backward_out")(_refl2_bwd_out)
kernel("replication_pad2d_backward")(_repl2_bwd)
kernel("replication_pad2d_backward_out")(_repl2_bwd_out)
kernel("replication_pad3d_backward")(_repl3_bwd)
kernel("replication_pad3d_backward_out")(_repl3_bwd_out)
_refl1, _refl1_bwd = _structured_pad_fns(True)
_refl3, _refl3_bwd = _structured_pad_fns(True)
_repl1, _repl1_bwd = _structured_pad_fns(False)
kernel("reflection_pad1d")(_refl1)
kernel("reflection_pad1d_backward")(_refl1_bwd)
kernel("reflection_pad3d")(_refl3)
kernel("reflection_pad3d_backward")(_refl3_bwd)
kernel("replication_pad1d")(_repl1)
kernel("replication_pad1d_backward")(_repl1_bwd)
kernel("replication_pad2d")(_structured_pad_fns(False)[0])  # backwards: plain, above
kernel("replication_pad3d")(_structured_pad_fns(False)[0])
