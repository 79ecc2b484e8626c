"""softmax / log_softmax and their backward (structured impls, convention (2)).

  _softmax.out impl:                  (self, dim, half_to_float, out)
  _log_softmax.out impl:              (self, dim, half_to_float, out)
  _softmax_backward_data.out impl:    (grad_output, output, dim, input_dtype, grad_input)
  _log_softmax_backward_data.out impl (same)

The tensor is viewed as (A, R, B) with R the softmax dim (see reduction.py); each
program handles a tile of (a, b) lanes. Where a lane's R elements fit one tile
(_rows.row_tile) the program reads them once, keeps them in registers, and stores the
result: one read and one write of each tensor, the copy-bandwidth floor. Longer rows
loop over R twice (online max and sum, then normalise), reading the input twice.
"""

import torch
import triton
import triton.language as tl

from . import _math
from ._common import tl_float_acc
from ._launch import cdiv, launch
from .copy import copy_kernel
from ._common import reduce_blocks, contiguous, as_arb, scalar_name
from ._declare import kernel
from ..backends import spec
from ._rows import row_tile, warps_for
from ._symbolic import numel


@triton.jit
def _tile(O, R, B, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr):
    """Offsets and mask of this program's (BLOCK_R, BLOCK_O) tile: whole lanes of R
    elements (B apart) of the (A, R, B) view, BLOCK_O lanes a program."""
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    r = tl.arange(0, BLOCK_R)
    mask = (r < R)[:, None] & (o < O)[None, :]
    return r[:, None] * B + ((o // B) * R * B + o % B)[None, :], mask


@triton.jit
def _softmax_tile_kernel(
    x,
    out,
    O,
    R,
    B,
    LOG: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    offs, mask = _tile(O, R, B, BLOCK_O, BLOCK_R)
    v = tl.load(x + offs, mask=mask, other=-float("inf")).to(ACC)
    m = tl.max(v, 0)
    # An all -inf row: exp(v - 0) is 0 and its sum 0, so the row is NaN as PyTorch's.
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    e = _math.exp_diff(v, m_safe[None, :], x)
    s = tl.sum(e, 0)
    if LOG:
        y = v - (m_safe + tl.log(s))[None, :]
    else:
        y = e * (1.0 / s)[None, :]
    tl.store(out + offs, y.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_bwd_tile_kernel(
    g,
    y,
    out,
    O,
    R,
    B,
    LOG: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    offs, mask = _tile(O, R, B, BLOCK_O, BLOCK_R)
    gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
    yv = tl.load(y + offs, mask=mask, other=0).to(ACC)
    if LOG:
        dx = gv - _math.exp_ftz(yv) * tl.sum(gv, 0)[None, :]
    else:
        dx = yv * (gv - tl.sum(gv * yv, 0)[None, :])
    tl.store(out + offs, dx.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_kernel(
    x,
    out,
    O,
    R,
    B,
    LOG: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    m = tl.full((BLOCK_O,), -float("inf"), ACC)
    s = tl.zeros((BLOCK_O,), ACC)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r < R)[:, None] & omask[None, :]
        v = tl.load(x + (r[:, None] * B + base[None, :]), mask=mask, other=-float("inf")).to(ACC)
        m_new = tl.maximum(m, tl.max(v, 0))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        e = _math.exp_diff(v, m_safe[None, :], x)
        s = s * _math.exp_ftz(m - m_safe) + tl.sum(e, 0)
        m = m_new
    m_safe = tl.where(m == -float("inf"), 0.0, m)
    log_s = tl.log(s)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r < R)[:, None] & omask[None, :]
        offs = r[:, None] * B + base[None, :]
        v = tl.load(x + offs, mask=mask, other=0).to(ACC)
        if LOG:
            y = v - m_safe[None, :] - log_s[None, :]
        else:
            y = _math.exp_diff(v, m_safe[None, :], x) / s[None, :]
        tl.store(out + offs, y.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_bwd_kernel(
    g,
    y,
    out,
    O,
    R,
    B,
    LOG: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_O: tl.constexpr,
    BLOCK_R: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    omask = o < O
    base = (o // B) * R * B + o % B
    acc = tl.zeros((BLOCK_O,), ACC)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r < R)[:, None] & omask[None, :]
        offs = r[:, None] * B + base[None, :]
        gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
        if LOG:
            acc += tl.sum(gv, 0)
        else:
            yv = tl.load(y + offs, mask=mask, other=0).to(ACC)
            acc += tl.sum(gv * yv, 0)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        mask = (r < R)[:, None] & omask[None, :]
        offs = r[:, None] * B + base[None, :]
        gv = tl.load(g + offs, mask=mask, other=0).to(ACC)
        yv = tl.load(y + offs, mask=mask, other=0).to(ACC)
        if LOG:
            dx = gv - _math.exp_ftz(yv) * acc[None, :]
        else:
            dx = yv * (gv - acc[None, :])
        tl.store(out + offs, dx.to(out.dtype.element_ty), mask=mask)


def _rowwise(kernels, tensors, out, dim, log):
    """kernels: (one-tile kernel, looped kernel); tensors: the inputs the kernels read."""
    x0 = tensors[0]
    if numel(out) == 0:
        return
    if x0.dim() == 0:
        tensors = [t.reshape(1) for t in tensors]
        dim = 0
    tensors = [contiguous(t) for t in tensors]
    d = dim % tensors[0].dim()
    _, A, R, B = as_arb(tensors[0], [d])
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    O = A * B
    tile = row_tile(O, R, B, arrays=len(tensors))
    if tile is not None:
        kernel, (bo, br, warps) = kernels[0], tile
        if len(tensors) == 1 and B == 1:  # the driver's own warps for a forward, if any
            warps = spec("softmax_fwd_warps", br) or warps
    else:
        kernel, (bo, br) = kernels[1], reduce_blocks(O, R, B)
        warps = warps_for(bo * br)
    launch(
        kernel,
        (cdiv(O, bo),),
        *tensors,
        target,
        O,
        R,
        B,
        LOG=log,
        ACC=tl_float_acc(x0.dtype),
        BLOCK_O=bo,
        BLOCK_R=br,
        num_warps=warps,
    )
    if target is not out:
        copy_kernel((out,), (target.view(out.shape),))


_FORWARD = (_softmax_tile_kernel, _softmax_kernel)
_BACKWARD = (_softmax_bwd_tile_kernel, _softmax_bwd_kernel)


def _check_float(x):
    """softmax and log_softmax of integers: PyTorch's kernels raise (F.softmax with a
    floating dtype= converts first)."""
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"host_softmax\" not implemented for '{scalar_name(x.dtype)}'")


@kernel("softmax", shapes=True)
def softmax_out(self: torch.Tensor, dim: int, half_to_float: bool, out: torch.Tensor) -> None:
    _check_float(self)
    _rowwise(_FORWARD, [self], out, dim, False)


@kernel("log_softmax", shapes=True)
def log_softmax_out(self: torch.Tensor, dim: int, half_to_float: bool, out: torch.Tensor) -> None:
    _check_float(self)
    _rowwise(_FORWARD, [self], out, dim, True)


@kernel("softmax_backward_data", shapes=True)
def softmax_backward_out(
    grad_output: torch.Tensor,
    output: torch.Tensor,
    dim: int,
    input_dtype: torch.dtype,
    grad_input: torch.Tensor,
) -> None:
    _rowwise(_BACKWARD, [grad_output, output], grad_input, dim, False)


@kernel("log_softmax_backward_data", shapes=True)
def log_softmax_backward_out(
    grad_output: torch.Tensor,
    output: torch.Tensor,
    dim: int,
    input_dtype: torch.dtype,
    grad_input: torch.Tensor,
) -> None:
    _rowwise(_BACKWARD, [grad_output, output], grad_input, dim, True)


def softmax(x, dim, dtype=None, log=False):
    """Functional helper (tests, fused ops)."""
    out = torch.empty(x.shape, dtype=dtype or x.dtype, device=x.device)
    (log_softmax_out if log else softmax_out)(x, dim, False, out)
    return out
