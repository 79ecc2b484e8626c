"""The backward of amax and amin, fused: torch_ext::amax_backward (plain op (3)), what
aten::amax and aten::amin run on privateuseone through their autograd kernel
(csrc/aten/AmaxAmin.cpp) unless the graph of the backward is built (double backward).

  torch_ext::amax_backward(grad, self, result, dim, keepdim) -> grad_input

PyTorch's formula (derivatives.yaml) is scale_grad_by_count(grad, result == self, dim):
(grad / count) * (self == result), with count the lane's ties; as a composite it is four
launches (eq, sum, div, mul) and temporaries of the input's size. One op serves amax and
amin: the tie test is the same. The input is viewed as (A, R, B), R the reduced extent,
each of the O = A * B lanes a (a, b) pair; a lane's gradient is grad[o] / count at its
ties and grad[o] / count * 0 elsewhere, so that a NaN lane (no element equals a NaN
result: count 0) is NaN throughout, and an inf or NaN grad makes NaN off the ties, as the
formula does. Where a lane's R elements fit one tile (_rows.row_tile) a program reads
them once, counts and writes: one launch. Longer lanes take two: the ties counted per
chunk of R, then each chunk written with its lane's total; both split R over programs
where the lanes are few (an amax over all dims). Reduced dims that are not adjacent in a
contiguous input are permuted after the kept ones (a copy unless the input is dense in
that order, as a transposed one is), and the gradient returned as the inverse view."""

import math

import torch
import triton
import triton.language as tl

from ..backends import spec
from ._common import contiguous, reduce_blocks, tl_float_acc
from ._declare import kernel
from ._launch import cdiv, launch, pow2_at_most
from ._rows import row_tile, warps_for
from ._symbolic import empty, sizes, strides


@triton.jit
def _ties(x, m, o, r, O, R, B, ACC: tl.constexpr):
    """The (BLOCK_R, BLOCK_O) tile at positions r of lanes o: its offsets, its mask and
    where it equals its lane's result m."""
    mask = (r < R)[:, None] & (o < O)[None, :]
    offs = r[:, None] * B + ((o // B) * R * B + o % B)[None, :]
    v = tl.load(x + offs, mask=mask, other=0).to(ACC)
    return offs, mask, (v == m[None, :]) & mask


@triton.jit
def _scaled(g, o, sg, cnt, O, ACC: tl.constexpr):
    """grad / count per lane, rounded as PyTorch's division (div_rn: Triton's `/` of fp32
    is an approximation)."""
    gr = tl.load(g + o * sg, mask=o < O, other=0).to(ACC)
    return tl.math.div_rn(gr, cnt.to(ACC))


@triton.jit
def _amax_bwd_tile_kernel(
    g, x, res, out, O, R, B, sg,
    ACC: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    m = tl.load(res + o, mask=o < O, other=0).to(ACC)
    offs, mask, hit = _ties(x, m, o, tl.arange(0, BLOCK_R), O, R, B, ACC)
    gr = _scaled(g, o, sg, tl.sum(hit.to(tl.int32), 0), O, ACC)
    tl.store(out + offs, (gr[None, :] * hit.to(ACC)).to(out.dtype.element_ty), mask=mask)


@triton.jit
def _amax_count_kernel(
    x, res, counts, O, R, B, r_split, S,
    ACC: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    # counts[o, s]: the ties of lane o in chunk s of R (r_split long, whole tiles)
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    s = tl.program_id(1)
    m = tl.load(res + o, mask=o < O, other=0).to(ACC)
    cnt = tl.zeros((BLOCK_O,), tl.int32)
    for r0 in range(s * r_split, tl.minimum((s + 1) * r_split, R), BLOCK_R):
        _, _, hit = _ties(x, m, o, r0 + tl.arange(0, BLOCK_R), O, R, B, ACC)
        cnt += tl.sum(hit.to(tl.int32), 0)
    tl.store(counts + o * S + s, cnt, mask=o < O)


@triton.jit
def _amax_bwd_kernel(
    g, x, res, counts, out, O, R, B, sg, r_split, S,
    ACC: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr,
):  # fmt: skip
    o = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
    s = tl.program_id(1)
    cnt = tl.zeros((BLOCK_O,), tl.int32)
    for s0 in range(0, S, BLOCK_S):  # every chunk's count of these lanes
        sp = s0 + tl.arange(0, BLOCK_S)
        cmask = (sp < S)[:, None] & (o < O)[None, :]
        cnt += tl.sum(tl.load(counts + o[None, :] * S + sp[:, None], mask=cmask, other=0), 0)
    gr = _scaled(g, o, sg, cnt, O, ACC)
    m = tl.load(res + o, mask=o < O, other=0).to(ACC)
    for r0 in range(s * r_split, tl.minimum((s + 1) * r_split, R), BLOCK_R):
        offs, mask, hit = _ties(x, m, o, r0 + tl.arange(0, BLOCK_R), O, R, B, ACC)
        tl.store(out + offs, (gr[None, :] * hit.to(ACC)).to(out.dtype.element_ty), mask=mask)


def _splits(O, R, bo, br):
    """Programs along R per tile of lanes: enough to fill a GPU where the lanes are few
    (the driver's `reduction_splits` where it has one: the interpreter's is 1)."""
    n = spec("reduction_splits", O, R)
    if n is not None:
        return n
    tiles = cdiv(O, bo)
    return 1 if tiles >= 512 else max(1, min(cdiv(R, br), cdiv(1024, tiles)))


def _layout(self, dim):
    """(dims, order): the reduced dims, sorted ([] is all), and None where they are one
    block of a contiguous self, else the order of self's dims (the kept ones, then the
    reduced) that makes them one."""
    nd = self.dim()
    dims = sorted({d % nd for d in dim}) if dim and nd else list(range(nd))
    if not dims or (self.is_contiguous() and dims[-1] + 1 - dims[0] == len(dims)):
        return dims, None
    return dims, [d for d in range(nd) if d not in dims] + dims


def _inverse(order):
    return [order.index(d) for d in range(len(order))]


@kernel(shapes=True)
def amax_backward(
    grad: torch.Tensor, self: torch.Tensor, result: torch.Tensor, dim: list[int], keepdim: bool
) -> torch.Tensor:
    """torch_ext::amax_backward -> grad_input (module doc)."""
    dims, order = _layout(self, dim)
    if order is None:
        x = self
        shape = sizes(self)  # expressions while a size-generic plan records (_symbolic)
        lo, hi = (dims[0], dims[-1] + 1) if dims else (0, 0)
        A, R, B = math.prod(shape[:lo]), math.prod(shape[lo:hi]), math.prod(shape[hi:])
    else:
        # The kept dims, then the reduced: a copy unless self is dense in that order (the
        # transpose of a contiguous tensor); the gradient comes back as the same view.
        x = contiguous(self.permute(order))
        shape, k = sizes(x), self.dim() - len(dims)
        A, R, B = math.prod(shape[:k]), math.prod(shape[k:]), 1
    out = empty(sizes(x), x.dtype, x.device)
    O = A * B
    if O * R == 0:  # nothing to write (an empty grid cannot launch)
        return out if order is None else out.permute(_inverse(order))
    # grad and result hold the lanes in order (keepdim or not: the same O elements); a
    # grad broadcast from one number (sum().backward()) is read in place, stride 0.
    sg = 1
    if not grad.is_contiguous():
        if all(s == 0 for s in strides(grad)):
            sg = 0
        else:
            grad = contiguous(grad)
    res = contiguous(result)
    acc = tl_float_acc(x.dtype)
    tile = row_tile(O, R, B)
    if tile is not None:
        bo, br, warps = tile
        launch(
            _amax_bwd_tile_kernel, (cdiv(O, bo),), grad, x, res, out, O, R, B, sg,
            ACC=acc, BLOCK_O=bo, BLOCK_R=br, num_warps=warps,
        )  # fmt: skip
    else:
        bo, br = reduce_blocks(O, R, B)
        splits = _splits(O, R, bo, br)
        r_split = cdiv(cdiv(R, splits), br) * br  # whole tiles: every chunk starts aligned
        splits = cdiv(R, r_split)
        counts = empty((O, splits), torch.int32, x.device)
        grid = (cdiv(O, bo), splits)
        warps = warps_for(bo * br)
        launch(
            _amax_count_kernel, grid, x, res, counts, O, R, B, r_split, splits,
            ACC=acc, BLOCK_O=bo, BLOCK_R=br, num_warps=warps,
        )  # fmt: skip
        launch(
            _amax_bwd_kernel, grid, grad, x, res, counts, out, O, R, B, sg, r_split, splits,
            ACC=acc, BLOCK_O=bo, BLOCK_R=br, BLOCK_S=pow2_at_most(splits, max(1, 2048 // bo)),
            num_warps=warps,
        )  # fmt: skip
    return out if order is None else out.permute(_inverse(order))


def amax_backward_fake(
    grad: torch.Tensor, self: torch.Tensor, result: torch.Tensor, dim: list[int], keepdim: bool
) -> torch.Tensor:
    _, order = _layout(self, dim)
    if order is None:
        return torch.empty_like(self, memory_format=torch.contiguous_format)
    return self.new_empty([self.shape[d] for d in order]).permute(_inverse(order))
