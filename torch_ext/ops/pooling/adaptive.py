"""Adaptive average and max pooling, 1-d to 3-d (+ backward)."""

import math
import torch
import triton
import triton.language as tl

from .._common import suggest_memory_format, tl_float_acc
from .._launch import cdiv, launch
from .._common import dense_out, spatial3, split4, store_masked, write_back
from ..copy import fill_
from ..index import _gather_scatter
from .._common import contiguous
from .._declare import kernel
from .._common import grid_for

# -- adaptive pooling, 2-d and 3-d ---------------------------------------------------
#   _adaptive_avg_pool{2,3}d(self, output_size) -> out                     (plain)
#   _adaptive_avg_pool{2,3}d_backward(grad_output, self) -> grad_input     (plain)
#   adaptive_avg_pool{2,3}d.out(self, output_size, out)                    (plain)
#   adaptive_max_pool{2,3}d.out impl: (self, output_size, out, indices)   (structured)
#   adaptive_max_pool{2,3}d_backward.grad_input impl: (grad_output, self, indices, grad_input)
# Output o pools input rows [floor(o*I/O), ceil((o+1)*I/O)); input row i lies
# in the windows of outputs [floor(i*O/I), ceil((i+1)*O/I)) (the same
# bounds, roles swapped), which the backward gathers.  Max indices are
# offsets into the input's (H, W) plane / (D, H, W) volume.


@triton.jit
def _window(o, I, O):
    return (o * I) // O, ((o + 1) * I + O - 1) // O


def _max_window(I, O):
    """The longest window of an adaptive pool from I to O (a loop bound)."""
    return min(I, cdiv(I, O) + 1) if O else 0


@triton.jit
def _adaptive_avg_kernel(
    x, out, total, D, H, W, OD, OH, OW, KD, KH, KW, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = split4(e, OD, OH, OW)
    ds, de = _window(od, D, OD)
    hs, he = _window(oh, H, OH)
    ws, we = _window(ow, W, OW)
    acc = tl.zeros((BLOCK,), ACC)
    for kd in range(0, KD):
        idd = ds + kd
        for kh in range(0, KH):
            ih = hs + kh
            row = ((plane * D + idd) * H + ih) * W
            for kw in range(0, KW):
                iw = ws + kw
                ok = mask & (idd < de) & (ih < he) & (iw < we)
                acc += tl.load(x + row + iw, mask=ok, other=0).to(ACC)
    store_masked(out, e, acc / ((de - ds) * (he - hs) * (we - ws)).to(ACC), mask)


@triton.jit
def _adaptive_avg_backward_kernel(
    g, gin, total, D, H, W, OD, OH, OW, KD, KH, KW, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    # Each input element gathers grad / window size from the outputs whose
    # windows hold it (KD x KH x KW of them at most).
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, idd, ih, iw = split4(e, D, H, W)
    ods, ode = _window(idd, OD, D)
    ohs, ohe = _window(ih, OH, H)
    ows, owe = _window(iw, OW, W)
    acc = tl.zeros((BLOCK,), ACC)
    for kd in range(0, KD):
        od = ods + kd
        ds, de = _window(od, D, OD)
        for kh in range(0, KH):
            oh = ohs + kh
            hs, he = _window(oh, H, OH)
            row = ((plane * OD + od) * OH + oh) * OW
            for kw in range(0, KW):
                ow = ows + kw
                ws, we = _window(ow, W, OW)
                ok = mask & (od < ode) & (oh < ohe) & (ow < owe)
                v = tl.load(g + row + ow, mask=ok, other=0).to(ACC)
                acc += v / tl.maximum((de - ds) * (he - hs) * (we - ws), 1).to(ACC)
    store_masked(gin, e, acc, mask)


@triton.jit
def _adaptive_max_kernel(
    x, out, idx, total, D, H, W, OD, OH, OW, KD, KH, KW, ACC: tl.constexpr, BLOCK: tl.constexpr
):
    # PyTorch's rule: a value replaces the maximum when greater or NaN (so
    # the last NaN of a window wins); the index starts at the window's corner.
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = e < total
    plane, od, oh, ow = split4(e, OD, OH, OW)
    ds, de = _window(od, D, OD)
    hs, he = _window(oh, H, OH)
    ws, we = _window(ow, W, OW)
    best = tl.full((BLOCK,), float("-inf"), ACC)
    bidx = (ds * H + hs) * W + ws
    for kd in range(0, KD):
        idd = ds + kd
        for kh in range(0, KH):
            ih = hs + kh
            for kw in range(0, KW):
                iw = ws + kw
                ok = mask & (idd < de) & (ih < he) & (iw < we)
                at = (idd * H + ih) * W + iw
                v = tl.load(x + plane * D * H * W + at, mask=ok, other=0).to(ACC)
                take = ok & ((v > best) | (v != v))
                best = tl.where(take, v, best)
                bidx = tl.where(take, at, bidx)
    store_masked(out, e, best, mask)
    tl.store(idx + e, bidx, mask=mask)


def _windows(in_shape, out_shape, nsp):
    """(D, H, W, OD, OH, OW, KD, KH, KW): sizes and longest windows."""
    i, o = spatial3(in_shape, nsp), spatial3(out_shape, nsp)
    return (*i, *o, *(_max_window(a, b) for a, b in zip(i, o)))


def _check_adaptive_input(name, x, output_size, nsp):
    if len(output_size) != nsp:
        raise RuntimeError(f"{name}: output_size must be {nsp}, got {list(output_size)}")
    if x.dim() not in (nsp + 1, nsp + 2):
        raise RuntimeError(
            f"{name}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got {list(x.shape)}"
        )
    for d in range(x.dim() - nsp, x.dim()):
        if x.shape[d] <= 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(x.shape)} with dimension {d} being empty"
            )
    if any(o < 0 for o in output_size):
        raise RuntimeError(
            f"{name}: elements of output_size must be greater than or equal to 0 "
            f"but received {list(output_size)}"
        )
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")


def _adaptive_avg_into(self, nsp, out):
    x = contiguous(self)
    total = out.numel()
    if total == 0:
        return
    o_t = dense_out(out)
    grid, block = grid_for(total)
    launch(
        _adaptive_avg_kernel,
        grid,
        x,
        o_t,
        total,
        *_windows(x.shape, out.shape, nsp),
        ACC=tl_float_acc(x.dtype),
        BLOCK=block,
    )
    write_back(out, o_t)


def _adaptive_out_shape(self, output_size):
    return list(self.shape[: self.dim() - len(output_size)]) + [int(o) for o in output_size]


def _adaptive_avg_fns(nsp):
    name = f"adaptive_avg_pool{nsp}d"

    def forward(self: torch.Tensor, output_size: list[int]) -> torch.Tensor:
        _check_adaptive_input(name, self, output_size, nsp)
        out = torch.empty(
            _adaptive_out_shape(self, output_size),
            dtype=self.dtype,
            device=self.device,
            memory_format=suggest_memory_format(self),
        )
        _adaptive_avg_into(self, nsp, out)
        return out

    def forward_out(self: torch.Tensor, output_size: list[int], out: torch.Tensor) -> torch.Tensor:
        _check_adaptive_input(name, self, output_size, nsp)
        if out.dtype != self.dtype:
            raise RuntimeError(
                f"{name}(): Expected out to have dtype {self.dtype}, but got {out.dtype}"
            )
        out.resize_(_adaptive_out_shape(self, output_size))  # a plain out= op sizes its own out
        _adaptive_avg_into(self, nsp, out)
        return out

    def backward(grad_output: torch.Tensor, self: torch.Tensor) -> torch.Tensor:
        bname = name + "_backward"
        for d in range(1, grad_output.dim()):
            if grad_output.shape[d] <= 0:
                raise RuntimeError(
                    f"{bname}(): Expected grad_output to have non-zero size for non-batch "
                    f"dimensions, but grad_output has sizes {list(grad_output.shape)} with "
                    f"dimension {d} being empty"
                )
        if (
            self.dim() not in (nsp + 1, nsp + 2)
            or grad_output.dim() != self.dim()
            or grad_output.shape[:-nsp] != self.shape[:-nsp]
        ):
            raise RuntimeError(
                f"{bname}(): grad_output of shape {list(grad_output.shape)} does "
                f"not match an input of shape {list(self.shape)}"
            )
        if grad_output.dtype != self.dtype:
            raise RuntimeError(
                f"{bname}(): expected dtype {self.dtype} for `grad_output` but got "
                f"dtype {grad_output.dtype}"
            )
        g = contiguous(grad_output)
        gi = torch.empty(
            self.shape,
            dtype=self.dtype,
            device=self.device,
            memory_format=suggest_memory_format(self),
        )
        total = gi.numel()
        if total:
            gi_t = dense_out(gi)
            grid, block = grid_for(total)
            launch(
                _adaptive_avg_backward_kernel,
                grid,
                g,
                gi_t,
                total,
                *spatial3(gi.shape, nsp),
                *spatial3(g.shape, nsp),
                *(
                    _max_window(o, i)
                    for i, o in zip(spatial3(gi.shape, nsp), spatial3(g.shape, nsp))
                ),
                ACC=tl_float_acc(g.dtype),
                BLOCK=block,
            )
            write_back(gi, gi_t)
        return gi

    return forward, forward_out, backward


def _adaptive_max_fns(nsp):
    def forward_out(
        self: torch.Tensor, output_size: list[int], out: torch.Tensor, indices: torch.Tensor
    ) -> None:
        x = contiguous(self)
        total = out.numel()
        if total == 0:
            return
        o_t, i_t = dense_out(out), dense_out(indices)
        grid, block = grid_for(total)
        launch(
            _adaptive_max_kernel,
            grid,
            x,
            o_t,
            i_t,
            total,
            *_windows(x.shape, out.shape, nsp),
            ACC=tl_float_acc(x.dtype),
            BLOCK=block,
        )
        write_back(out, o_t)
        write_back(indices, i_t)

    def backward_out(
        grad_output: torch.Tensor,
        self: torch.Tensor,
        indices: torch.Tensor,
        grad_input: torch.Tensor,
    ) -> None:
        # Adds each gradient at its index (fp16/bf16 through float32).
        volume = math.prod(self.shape[self.dim() - nsp :])
        planes = self.numel() // volume if self.numel() else 0
        gi = dense_out(grad_input)
        fill_(gi, 0)
        if grad_output.numel():
            g2 = contiguous(grad_output).reshape(planes, -1)
            i2 = contiguous(indices).reshape(planes, -1)
            _gather_scatter(i2, g2, gi.view(planes, -1), 1, 2)
        write_back(grad_input, gi)

    return forward_out, backward_out


# -- kernels made by the factories above: one declaration per manifest name ------------
_avg2, _avg2_out, _avg2_bwd = _adaptive_avg_fns(2)
_avg3, _avg3_out, _avg3_bwd = _adaptive_avg_fns(3)
_max2, _max2_bwd = _adaptive_max_fns(2)
_max3, _max3_bwd = _adaptive_max_fns(3)
kernel("_adaptive_avg_pool2d")(_avg2)
kernel("adaptive_avg_pool2d_out")(_avg2_out)
kernel("_adaptive_avg_pool2d_backward")(_avg2_bwd)
kernel("adaptive_max_pool2d")(_max2)
kernel("adaptive_max_pool2d_backward")(_max2_bwd)
kernel("_adaptive_avg_pool3d")(_avg3)
kernel("adaptive_avg_pool3d_out")(_avg3_out)
kernel("_adaptive_avg_pool3d_backward")(_avg3_bwd)
kernel("adaptive_max_pool3d")(_max3)
kernel("adaptive_max_pool3d_backward")(_max3_bwd)
