"""Fractional max pooling, 2-d and 3-d (PyTorch's kernels are CPU/CUDA-specific):

  fractional_max_pool2d.output impl: (self, kernel_size, output_size, random_samples,
      output, indices)  (PyTorch's meta sizes the outputs)
  fractional_max_pool2d_backward.grad_input impl: (grad_output, self, kernel_size,
      output_size, indices, grad_input)
  fractional_max_pool3d.output impl: (self, poolT, poolH, poolW, outT, outH, outW,
      random_samples, numBatch, numPlanes, inT, inH, inW, output, indices)
  fractional_max_pool3d_backward(.grad_input): plain

Each plane has one random sample u in [0, 1) per pooled dimension (2-d: W then H;
3-d: T, H, W); window i of a dimension starts at int((i + u) * alpha) - int(u * alpha)
with alpha = (in - pool) / (out - 1) in the input's precision, the last at in - pool,
as PyTorch's kernels. One lane per output element scans its window (a value replaces
the maximum when greater or NaN; the index is into the plane). The backward adds
each gradient at its index (scatter_add).
"""

import torch
import triton
import triton.language as tl

from .._common import block_for, contiguous, dense_out, write_back, write_result
from .._declare import kernel
from .._launch import cdiv, launch


@triton.jit
def _start(i, u, n_in, n_out, pool, COMP: tl.constexpr):
    alpha = (n_in - pool).to(COMP) / tl.maximum(n_out - 1, 1).to(COMP)
    s = ((i.to(COMP) + u) * alpha).to(tl.int32) - (u * alpha).to(tl.int32)
    return tl.where(i == n_out - 1, n_in - pool, s)


@triton.jit
def _frac_kernel(
    x, samples, y, idx, TOTAL, OP, OT, OH, OW, IT, IH, IW, KT, KH, KW, NS, ST, SH, SW,
    HAS_T: tl.constexpr, COMP: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = o < TOTAL
    plane = o // OP
    r = o % OP
    ot = r // (OH * OW)
    oh = (r // OW) % OH
    ow = r % OW
    sbase = samples + plane * NS
    uh = tl.load(sbase + SH, mask=ok, other=0).to(COMP)
    uw = tl.load(sbase + SW, mask=ok, other=0).to(COMP)
    t0 = ot * 0
    if HAS_T:
        ut = tl.load(sbase + ST, mask=ok, other=0).to(COMP)
        t0 = _start(ot, ut, IT, OT, KT, COMP)
    h0 = _start(oh, uh, IH, OH, KH, COMP)
    w0 = _start(ow, uw, IW, OW, KW, COMP)
    base = x + plane * (IT * IH * IW)
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    if x.dtype.element_ty == tl.float64:
        best = best.to(tl.float64)
    arg = (t0 * IH + h0) * IW + w0
    for k in range(0, KT * KH * KW):
        kt = k // (KH * KW)
        kh = (k // KW) % KH
        kw = k % KW
        p = ((t0 + kt) * IH + (h0 + kh)) * IW + (w0 + kw)
        v = tl.load(base + p, mask=ok, other=0).to(best.dtype)
        take = (v > best) | (v != v)
        best = tl.where(take, v, best)
        arg = tl.where(take, p, arg)
    out = best
    if y.dtype.element_ty == tl.bfloat16:
        out = out.to(tl.float32)  # the interpreter casts to bf16 bitwise otherwise
    tl.store(y + o, out.to(y.dtype.element_ty), mask=ok)
    tl.store(idx + o, arg.to(tl.int64), mask=ok)


def _comp(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def _run(self, pool, out_size, samples, output, indices, order):
    """pool/out_size as (T, H, W) (T = 1 for 2-d); `order` maps T, H, W to the sample's
    slot (-1: none)."""
    nsp = 2 if order[0] < 0 else 3
    planes = 1
    for v in self.shape[: self.dim() - nsp]:
        planes *= int(v)
    ins = [1] * (3 - nsp) + [int(v) for v in self.shape[self.dim() - nsp :]]
    total = planes * out_size[0] * out_size[1] * out_size[2]
    # PyTorch's meta checked the sizes and made the outputs (contiguous, or not: out=)
    y, ix = dense_out(output), dense_out(indices)
    if total:
        block = block_for(total)
        launch(
            _frac_kernel, (cdiv(total, block),),
            contiguous(self), contiguous(samples), y, ix, total,
            out_size[0] * out_size[1] * out_size[2], *out_size, *ins, *pool,
            samples.shape[-1], max(order[0], 0), order[1], order[2],
            HAS_T=order[0] >= 0, COMP=_comp(self.dtype), BLOCK=block,
        )  # fmt: skip
    write_back(y, output)
    write_back(ix, indices)


def _check_samples(self, samples, n, name):
    batch = self.shape[0] if self.dim() == n + 2 else 1
    planes = self.shape[-n - 1]
    if samples.dim() != 3 or samples.shape[-1] != n or samples.shape[0] < batch:
        raise RuntimeError(
            f"{name}: expected random_samples of shape [{batch}, {planes}, {n}], but got "
            f"{list(samples.shape)}"
        )
    if samples.dtype != self.dtype:
        raise RuntimeError(f"{name}: expected random_samples of dtype {self.dtype}, got {samples.dtype}")  # fmt: skip


@kernel()
def fractional_max_pool2d(
    self: torch.Tensor,
    kernel_size: list[int],
    output_size: list[int],
    random_samples: torch.Tensor,
    output: torch.Tensor,
    indices: torch.Tensor,
) -> None:
    _check_samples(self, random_samples, 2, "fractional_max_pool2d")
    pool = [1, int(kernel_size[0]), int(kernel_size[1])]
    outs = [1, int(output_size[0]), int(output_size[1])]
    _run(self, pool, outs, random_samples, output, indices, (-1, 1, 0))


@kernel()
def fractional_max_pool3d(
    self: torch.Tensor,
    pT: int,
    pH: int,
    pW: int,
    oT: int,
    oH: int,
    oW: int,
    random_samples: torch.Tensor,
    nb: int,
    npl: int,
    iT: int,
    iH: int,
    iW: int,
    output: torch.Tensor,
    indices: torch.Tensor,
) -> None:
    _check_samples(self, random_samples, 3, "fractional_max_pool3d")
    _run(self, [pT, pH, pW], [oT, oH, oW], random_samples, output, indices, (0, 1, 2))


def _backward(grad_output, self, indices, nsp, grad_input):
    lead = self.dim() - nsp
    planes = 1
    for v in self.shape[:lead]:
        planes *= int(v)
    gi = torch.zeros(self.shape, dtype=self.dtype, device=self.device)
    if grad_output.numel():
        gi.view(planes, -1).scatter_add_(
            1, indices.reshape(planes, -1), grad_output.reshape(planes, -1)
        )
    write_result(grad_input, gi)
    return grad_input


@kernel()
def fractional_max_pool2d_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    output_size: list[int],
    indices: torch.Tensor,
    grad_input: torch.Tensor,
) -> None:
    _backward(grad_output, self, indices, 2, grad_input)


@kernel()
def fractional_max_pool3d_backward_out(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    output_size: list[int],
    indices: torch.Tensor,
    grad_input: torch.Tensor,
) -> torch.Tensor:
    if list(grad_output.shape) != list(indices.shape):
        raise RuntimeError(
            f"fractional_max_pool3d_backward_out(): gradOutput sizes unexpected: "
            f"{list(grad_output.shape)} vs indices {list(indices.shape)}"
        )
    return _backward(grad_output, self, indices, 3, grad_input)


@kernel()
def fractional_max_pool3d_backward(
    grad_output: torch.Tensor,
    self: torch.Tensor,
    kernel_size: list[int],
    output_size: list[int],
    indices: torch.Tensor,
) -> torch.Tensor:
    gi = torch.empty(0, dtype=self.dtype, device=self.device)
    return fractional_max_pool3d_backward_out(
        grad_output, self, kernel_size, output_size, indices, gi
    )
