"""index_select (+ out) and embedding (+ dense backward): rows picked by an index
tensor, each index bounds-checked (ops/_bounds.py).

Plain (3): index_select(self, dim, index), index_select_out(self, dim, index, out),
embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse),
embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq).
"""

import math

import torch
import triton
import triton.language as tl

from ..backends import spec
from . import _bounds, deterministic
from ._common import block_for, check_out_overlap, contiguous, float_acc
from ._declare import kernel
from ._launch import cdiv, launch
from .copy import copy_kernel, fill_kernel
from ._symbolic import empty, numel, sizes


@triton.jit
def indexed_position(index, o, mask, L, S, B, flag):
    """Flat position o of an (A, L, B) iteration -> (a, l, b), index[l] and
    the mask without lanes whose index is outside [0, S) (recorded in flag)."""
    b = o % B
    l = (o // B) % L
    a = o // (B * L)
    idx = tl.load(index + l, mask=mask, other=0).to(tl.int64)
    bad = mask & ((idx < 0) | (idx >= S))
    _bounds.record(flag, idx, bad)
    return a, l, b, idx, mask & (bad == 0)


@triton.jit
def _index_select_kernel(src, index, out, n, L, S, B, flag, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    a, l, b, idx, ok = indexed_position(index, o, mask, L, S, B, flag)
    v = tl.load(src + (a * S + idx) * B + b, mask=ok, other=0)
    tl.store(out + o, v, mask=mask)


@kernel()
def index_select_out(
    self: torch.Tensor, dim: int, index: torch.Tensor, out: torch.Tensor
) -> torch.Tensor:
    check_out_overlap(out, self, index)
    return _index_select(self, dim, index, out)


def _index_select(self, dim, index, out):
    x = contiguous(self)
    if x.dim() == 0:
        x = x.reshape(1)
    d = dim % x.dim()
    A = math.prod(x.shape[:d])
    S = x.shape[d]
    B = math.prod(x.shape[d + 1 :])
    index = contiguous(index.reshape(-1))
    L = index.numel()
    out.resize_(
        [*self.shape[:d], L, *self.shape[d + 1 :]] if self.dim() else []
    )  # plain out=: sized here
    n = A * L * B
    if n == 0:
        return out
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    block = block_for(n)
    flag = _bounds.new_flag(x.device, "index_select", S)
    launch(_index_select_kernel, (cdiv(n, block),), x, index, target, n, L, S, B, flag, BLOCK=block)
    _bounds.check(flag)
    if target is not out:
        copy_kernel((out,), (target,))
    return out


@kernel()
def index_select(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    shape = list(self.shape) if self.dim() else [1]
    shape[dim % len(shape)] = index.numel()
    if self.dim() == 0:
        shape = []
    out = torch.empty(shape, dtype=self.dtype, device=self.device)
    return _index_select(self, dim, index, out)


@kernel(shapes=True)  # sizes through _symbolic: a new batch or length replays
def embedding(
    weight: torch.Tensor,
    indices: torch.Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> torch.Tensor:
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {indices.dtype} instead (while checking arguments "
            "for embedding)"
        )
    S, D = sizes(weight)
    out = empty([*sizes(indices), D], weight.dtype, weight.device)
    L = numel(indices)
    if L * D == 0:
        return out
    x = contiguous(weight)
    index = contiguous(indices)  # read as L indices from its pointer
    n = L * D
    block = block_for(n)
    flag = _bounds.new_flag(x.device, "index_select", S)
    launch(_index_select_kernel, (cdiv(n, block),), x, index, out, n, L, S, D, flag, BLOCK=block)
    _bounds.check(flag)
    return out


@triton.jit
def _embedding_bwd_kernel(
    grad, index, out, n, D, padding_idx, num_weights, flag, BLOCK: tl.constexpr
):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    row = o // D
    col = o % D
    idx = tl.load(index + row, mask=mask, other=0).to(tl.int64)
    bad = mask & ((idx < 0) | (idx >= num_weights))
    _bounds.record(flag, idx, bad)
    mask = mask & (idx != padding_idx) & (bad == 0)
    g = tl.load(grad + o, mask=mask, other=0).to(out.dtype.element_ty)
    tl.atomic_add(out + idx * D + col, g, mask=mask)


@kernel(shapes=True)
def embedding_dense_backward(
    grad_output: torch.Tensor,
    indices: torch.Tensor,
    num_weights: int,
    padding_idx: int,
    scale_grad_by_freq: bool,
) -> torch.Tensor:
    D = grad_output.shape[-1]
    out_dtype = grad_output.dtype
    if scale_grad_by_freq:  # each row's gradient divided by how often its index occurs
        idx = indices.reshape(-1)
        freq = torch.bincount(idx.long(), minlength=num_weights).index_select(0, idx.long())
        g = grad_output.reshape(-1, D).to(float_acc(grad_output.dtype))
        grad_output = g / freq.to(g.dtype).unsqueeze(1)
    # Each weight row summed by one program in a fixed order (a stable sort of the
    # indices), deterministic mode or not, as CUDA's embedding backward (sort and segment
    # sums): float atomics on a GPU changed the rounding from run to run (a Llama run's
    # loss after 20 steps 1.8258 against 1.8673 at the same code, H200). A row's sum is
    # rounded once, into the output's dtype: no float32 buffer and no conversion pass.
    in_order = deterministic.enabled(grad_output.dtype) or not spec("atomics_in_order")
    acc = out_dtype if in_order else float_acc(grad_output.dtype)
    grad_w = torch.empty((num_weights, D), dtype=acc, device=grad_output.device)
    fill_kernel((grad_w,), (), acc, 0)
    g = contiguous(grad_output).view(-1, D)
    idx = contiguous(indices.reshape(-1))
    n = numel(grad_output)  # g's (its view): an expression while recording
    if n:
        flag = _bounds.new_flag(g.device, "embedding_backward", num_weights)
        if in_order:
            deterministic.embedding_backward_(grad_w, g, idx, padding_idx, flag, numel(indices))
        else:  # the interpreter runs programs one after another: atomics in order
            block = block_for(n)
            launch(
                _embedding_bwd_kernel,
                (cdiv(n, block),),
                g,
                idx,
                grad_w,
                n,
                D,
                padding_idx,
                num_weights,
                flag,
                BLOCK=block,
            )
        _bounds.check(flag)
    if acc == out_dtype:
        return grad_w
    out = torch.empty((num_weights, D), dtype=out_dtype, device=grad_output.device)
    copy_kernel((out,), (grad_w,))
    return out


@kernel()
def embedding_renorm_(
    self: torch.Tensor, indices: torch.Tensor, max_norm: float, norm_type: float
) -> torch.Tensor:
    """embedding(max_norm=...)'s in-place renormalisation: each row `indices` names (once,
    however often it repeats) whose p-norm passes max_norm is scaled by
    max_norm / (norm + 1e-7), as the CPU and CUDA do. Our unique, index_select (bounds
    checked), norm and index_copy_."""
    if self.dim() != 2:
        raise RuntimeError(f"torch_ext: embedding_renorm_ expects a 2-d weight, got {self.dim()}-d")
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(
            f"torch_ext: embedding_renorm_ expects int64 or int32 indices, got {indices.dtype}"
        )
    rows = torch.unique(indices.reshape(-1))
    if rows.numel() == 0:
        return self
    picked = self.index_select(0, rows)
    acc = float_acc(self.dtype)
    norms = torch.linalg.vector_norm(picked, float(norm_type), dim=1, dtype=acc)
    scale = torch.where(norms > max_norm, max_norm / (norms + 1e-7), torch.ones_like(norms))
    self.index_copy_(0, rows, (picked * scale[:, None]).to(self.dtype))
    return self
