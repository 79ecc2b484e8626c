"""Batch norm: training forward in two launches (per-channel statistics with the
running-stat update, then normalise/affine), eval in one, backward in two (per-channel
sums with dweight/dbias, then dx); where a channel's elements fit one program's
registers (small maps, the driver's `batch_norm_resident`), the training forward and
the backward in one launch each, reading the activation once; where the activations fit
L2 (the driver's `batch_norm_coop`), one launch each whose programs meet at a barrier per
channel block (batch_norm_coop.py). Kernels and their tiling: batch_norm_kernels.py;
the aten entry points: batch_norm_aten.py.
The activation is read in place through its (N, C, spatial) strides, so NCHW and
channels_last both run without a copy; the split reductions are merged in a fixed order
(deterministic), their item loops pipelined where long (the driver's `batch_norm_stages`).
Statistics are float32 for fp16/bf16 inputs; weights and running stats may have another
dtype (autocast)."""

import math

import torch

from ._common import contiguous, float_acc, ncs_strides, pixel_alignment, stat_dtype, tl_float_acc
from ._launch import ARRIVALS, arrival_counters, cdiv, launch, next_pow2
from ..backends import spec
from .batch_norm_coop import _bn_coop_bwd_kernel, _bn_coop_fwd_kernel
from .batch_norm_kernels import (
    _bn_apply_kernel,
    _bn_bwd_dx_kernel,
    _bn_bwd_sums_kernel,
    _bn_resident_bwd_kernel,
    _bn_resident_fwd_kernel,
    _bn_stats_kernel,
)


def _view(t):
    st = ncs_strides(t)
    if st is None:
        t = contiguous(t)
        st = ncs_strides(t)
    return t, st


# Registers a thread of the one-launch kernels may use: two 8-warp programs a
# multiprocessor fit (64Ki registers), so that the spec's programs a multiprocessor are
# resident at once whatever the compiler would have chosen.
COOP_MAXNREG = 128
# Programs a channel block needs to take the one-launch kernels (with fewer the two
# launches fill the GPU better; with one, any grid passes its barriers: the tests run
# the kernels under the interpreter so).
COOP_MIN_SPLIT = 2

# Without a driver's choice (the interpreter, whose cost is per program and per loop
# step): big tiles, 4 programs, 2 partial rows per merge step (so tests run the loop).
_INTERPRETER_TILING = (1 << 14, 4, 0, 4, None)


def _align(S, sts):
    """What the kernels may tell Triton the map's size and every tensor's sample and
    channel strides are multiples of (_common.pixel_alignment): 1 for maps whose size is a
    multiple of 16 (Triton knows it)."""
    return 1 if S % 16 == 0 else pixel_alignment(S, sts)


def _spatial_block(S, lanes):
    """Tile length along a strided spatial axis: the longest power of two (down to 128)
    that pads S by at most 1/8, else the least padding."""
    top = min(next_pow2(S), lanes)
    blocks = [top >> k for k in range(top.bit_length()) if top >> k >= min(128, top)]
    for b in blocks:
        if cdiv(S, b) * b * 8 <= S * 9:
            return b
    return min(blocks, key=lambda b: cdiv(S, b) * b)


class _Plan:
    """Tile and split of the (C, N*S) reduction over tensors of strides `sts`
    ((sN, sC, sS) each, x's first); a function of sizes and strides only."""

    def __init__(self, x, sts):
        N, C = x.shape[0], x.shape[1]
        S = math.prod(x.shape[2:])
        self.channels_contiguous = channels_contiguous = C > 1 and all(sC == 1 for _, sC, _ in sts)
        lanes, programs, merge_lanes, warps, apply_items = (
            spec("batch_norm_tiling", x.element_size(), channels_contiguous) or _INTERPRETER_TILING
        )
        if all(N == 1 or S == 1 or sN == S * sS for sN, _, sS in sts):
            # Samples follow each other (channels_last, N == 1, S == 1): one row axis.
            sts = [(0, sC, sS if S > 1 else sN) for sN, sC, sS in sts]
            N, S = 1, N * S
        if channels_contiguous:
            # Channels contiguous: a tile's rows are 64 channels (128 bytes of bf16),
            # vector loads along C; other channel blocks read the rest of each line.
            bc = min(next_pow2(C), 64)
            bs, bn = min(next_pow2(S), max(1, lanes // bc)), 1
        else:
            bs = _spatial_block(S, lanes)
            # Short spatial rows (7x7, 14x14): a tile covers several samples.
            bn = min(next_pow2(N), lanes // bs) if bs >= S else 1
            bc = min(next_pow2(C), max(1, lanes // (bs * bn)))
        self.N, self.C, self.S, self.BC, self.BN, self.BS = N, C, S, bc, bn, bs
        self.device = x.device
        self.sts = sts
        self.TN, self.TS = cdiv(N, bn), cdiv(S, bs)
        self.items = self.TN * self.TS
        self.cblocks = cblocks = cdiv(C, bc)
        # Valid (n, s) elements of an item: the same in every item before `full`; after
        # it the last s-block's (BN == 1) or the last n-block's (one s-block).
        if bn == 1:
            full = self.items - self.TN
            self.counts = (full, bs, S - (self.TS - 1) * bs)
        else:
            self.counts = (self.items - 1, bn * S, (N - (self.TN - 1) * bn) * S)
        # Splits of a channel block's items: enough programs to fill the device; the
        # last program of a block merges the splits' partials, split_p rows a step,
        # at most 4 steps.
        split_p = 1 << (max(2, merge_lanes // bc).bit_length() - 1)
        split = min(self.items, max(1, programs // cblocks), 4 * split_p)
        if cblocks > ARRIVALS:
            split = 1
        self.per = cdiv(self.items, split)
        self.split = cdiv(self.items, self.per)
        self.split_p = min(split_p, next_pow2(self.split))
        # The normalise / dx launch: `apply_items` items a program (a pointwise grid).
        self.per_apply = apply_items or self.per
        self.apply_grid = (cblocks, cdiv(self.items, self.per_apply))
        # Offsets in 32 bits unless a tile (its masked lanes too) may reach 2**31.
        reach = max(
            (N + bn) * abs(sN) + (S + bs) * abs(sS) + (C + bc) * abs(sC) for sN, sC, sS in sts
        )
        self.i64 = reach >= 1 << 31
        self.warps = warps
        # Registers a thread that keep the split grid one wave (H200, 74 registers: 3 of 4
        # programs fit a multiprocessor, the statistics ran 1.3 waves; ncu, session 35).
        sms = spec("multiprocessors")
        cap = 65536 // (max(1, programs // sms) * 32 * warps) if sms else 0
        self.maxnreg = min(cap, 255) if cap >= 64 else None  # none under 64: spills
        self.align = _align(S, sts)
        self.elem_size = x.element_size()

    def resident(self, backward):
        """(programs, tiles) of the one-launch kernels, or None: a channel's N x S
        elements padded to powers of two fit the driver's lanes a program (32 bytes of
        channels where they are contiguous), more channels a program while that leaves
        at least the driver's number of programs; up to the driver's wide lanes, one
        block of channels a program."""
        r = spec("batch_norm_resident", self.elem_size, backward)
        if r is None:
            return None
        lanes, min_programs, lanes_per_warp, wide = r
        bn, bs = next_pow2(self.N), next_pow2(self.S)
        bc = 1
        if self.C > 1 and all(sC == 1 for _, sC, _ in self.sts):
            # channels contiguous (channels_last): at least 32 bytes of a row a program,
            # a sector (1 or 2 channels of a 2Ki-byte row ran 3-5x slower, H200)
            bc = min(next_pow2(self.C), max(1, 32 // self.elem_size))
        if bc * bn * bs > wide:
            return None
        # past `lanes` (up to `wide`), one block of channels a program, none paired
        while bc * 2 * bn * bs <= lanes and cdiv(self.C, bc * 2) >= min_programs:
            bc *= 2
        warps = max(1, min(16, bc * bn * bs // lanes_per_warp))
        tiles = dict(I64=self.i64, AL=self.align, BC=bc, BN=bn, BS=bs, num_warps=warps)
        return cdiv(self.C, bc), tiles

    def coop(self, backward):
        """(grid, items a program, partial rows a merge step) of the one-launch kernels
        (batch_norm_coop.py), or None: activations of at most the driver's bytes (x, and
        dy backward), split over as many programs per channel block as keep the grid
        within the driver's programs a multiprocessor (all resident at once: they wait
        for each other), at least two; on the default stream only (_default_stream)."""
        r = spec("batch_norm_coop", self.elem_size, backward, self.channels_contiguous, self.C)
        moved = self.N * self.S * self.C * self.elem_size * (2 if backward else 1)
        if r is None or moved > r[0]:
            return None
        sms = spec("multiprocessors") or 1
        split = min(self.items, max(1, r[1] * sms // self.cblocks))
        # Every program reads its block's split x BC partial pairs: in all about
        # split**2 * C * 8 bytes, kept within the activations' own bytes (a channels_last
        # map of 64 channels is one block: 264 programs would read 36 MB of partials for
        # a 13 MB map); a grid left under one program a multiprocessor keeps two launches.
        split = min(split, max(1, math.isqrt(moved // (8 * self.C))))
        if split < COOP_MIN_SPLIT or (split > 1 and self.cblocks * split < sms):
            return None
        if (split > 1 and _interpreted()) or not _default_stream(self.device):
            return None
        per = cdiv(self.items, split)
        split = cdiv(self.items, per)
        # partial rows a merge step reads: as the two-launch merge's (registers)
        merge_lanes = (spec("batch_norm_tiling", self.elem_size) or _INTERPRETER_TILING)[2]
        split_p = min(next_pow2(split), 1 << (max(2, merge_lanes // self.BC).bit_length() - 1))
        return (self.cblocks, split), per, split_p

    def stages(self, per):  # the pipeline stages of a loop over `per` items
        return spec("batch_norm_stages", self.elem_size, per) or 1

    def strides(self, k):
        return self.sts[k]

    def same(self, k):
        return self.sts[k] == self.sts[0]

    def shape_args(self):
        return (self.C, self.N, self.S)


def _default_stream(device):
    """Whether the op runs on its device's default stream, the one stream where the
    one-launch kernels are recorded: their barrier counters are the device's, and a
    launch on another stream at the same time would share them (see the README's known
    limitations)."""
    if not torch.accelerator.is_available():  # kernels on CPU tensors, nothing else
        return True
    index = device.index if device.type == torch.accelerator.current_accelerator().type else None
    return torch.accelerator.current_stream(index).stream_id == 0


def _interpreted():
    """Whether launches run in Triton's interpreter, one program after another: a channel
    block of several programs at a barrier would wait forever there (a GPU's tiling
    forced on the host driver, as tests do)."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(_bn_coop_fwd_kernel, InterpretedFunction)


def _check(input):
    if input.dim() < 2:
        raise RuntimeError(
            f"torch_ext: batch_norm expects an input of at least 2 dims, got {input.dim()}"
        )


def _empty_like(x):
    y = torch.empty_like(x)
    st = ncs_strides(y)
    if st is None:  # not dense: a contiguous output
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        st = ncs_strides(y)
    return y, st


def bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(out, save_mean, save_invstd); running stats updated in place when training."""
    _check(input)
    x, st = _view(input)
    sd = stat_dtype(x.dtype)
    y, yst = _empty_like(x)
    C = x.shape[1]
    acc = tl_float_acc(x.dtype)
    if training:
        smean = torch.empty((C,), dtype=sd, device=x.device)
        sinv = torch.empty((C,), dtype=sd, device=x.device)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "torch_ext: batch_norm in eval mode needs running_mean and running_var"
            )
        smean = torch.empty((0,), dtype=sd, device=x.device)
        sinv = torch.empty((0,), dtype=sd, device=x.device)
    if C == 0 or x.numel() == 0:
        return y, smean, sinv
    p = _Plan(x, [st, yst])
    tiles = _tiles(p, x)
    has_run = running_mean is not None and running_var is not None
    one = p.resident(False) if training else None
    if one is not None:
        programs, rtiles = one
        launch(
            _bn_resident_fwd_kernel, (programs,), x, y,
            weight if weight is not None else x, bias if bias is not None else x,
            running_mean if has_run else x, running_var if has_run else x, smean, sinv,
            *p.shape_args(), *p.strides(0), *p.strides(1), float(momentum), float(eps),
            HAS_RUN=has_run, HAS_W=weight is not None, HAS_B=bias is not None,
            Y_AS_X=p.same(1), ACC=acc, **rtiles,
        )  # fmt: skip
        return y, smean, sinv
    co = p.coop(False) if training else None
    if co is not None:
        grid, per, split_p = co
        part = torch.empty((2, grid[1], C), dtype=float_acc(x.dtype), device=x.device)
        launch(
            _bn_coop_fwd_kernel, grid, x, y,
            weight if weight is not None else x, bias if bias is not None else x,
            running_mean if has_run else x, running_var if has_run else x, smean, sinv, part,
            arrival_counters("batch_norm_coop", x.device),
            *p.shape_args(), *p.strides(0), *p.strides(1), p.TN, p.TS, p.items, per, *p.counts,
            float(momentum), float(eps),
            HAS_RUN=has_run, HAS_W=weight is not None, HAS_B=bias is not None,
            Y_AS_X=p.same(1), SPLIT_P=split_p, ST=p.stages(per), maxnreg=COOP_MAXNREG, **tiles,
        )  # fmt: skip
        return y, smean, sinv
    if training:
        launch_stats(p, x, running_mean, running_var, smean, sinv, momentum, eps)
        mean, stat = smean, sinv
    else:
        mean, stat = running_mean, running_var
    launch_apply(p, x, y, weight, bias, mean, stat, not training, eps)
    return y, smean, sinv


def _tiles(p, x):
    return dict(ACC=tl_float_acc(x.dtype), I64=p.i64, AL=p.align, BC=p.BC, BN=p.BN, BS=p.BS,
                num_warps=p.warps)  # fmt: skip


def launch_stats(p, x, running_mean, running_var, smean, sinv, momentum, eps):
    """smean, sinv[c] = each channel's mean and 1 / sqrt(var + eps) over x (the (N, C, S)
    view `p` plans; the running stats updated where given): the split statistics kernel,
    its partials merged by the last program of a channel block."""
    has_run = running_mean is not None and running_var is not None
    merge = p.split > 1
    part = x
    if merge:
        part = torch.empty((2, p.split, p.C), dtype=float_acc(x.dtype), device=x.device)
    launch(
        _bn_stats_kernel, (p.cblocks, p.split), x, part,
        arrival_counters("batch_norm", x.device) if merge else x,
        running_mean if has_run else x, running_var if has_run else x, smean, sinv,
        *p.shape_args(), *p.strides(0), p.TN, p.TS, p.items, p.per, *p.counts,
        float(momentum), float(eps),
        HAS_RUN=has_run, MERGE=merge, SPLIT_P=p.split_p, ST=p.stages(p.per),
        maxnreg=p.maxnreg, **_tiles(p, x),
    )  # fmt: skip


def launch_apply(p, x, y, weight, bias, mean, stat, is_var, eps):
    """y = (x - mean) * invstd * weight + bias per channel; `stat` is invstd, or the
    variance where `is_var` (eval's running stats)."""
    launch(
        _bn_apply_kernel, p.apply_grid, x, y,
        weight if weight is not None else x, bias if bias is not None else x, mean, stat,
        *p.shape_args(), *p.strides(0), *p.strides(1), p.TN, p.items, p.per_apply, float(eps),
        IS_VAR=bool(is_var), HAS_W=weight is not None, HAS_B=bias is not None,
        Y_AS_X=p.same(1), ST=1, **_tiles(p, x),
    )  # fmt: skip


def bn_backward(grad_out, input, weight, mean, stat, train, eps, mask, is_var):
    """(dx, dweight, dbias) from `mean` and `stat` (invstd, or the running var when
    `is_var`); None where `mask` is False."""
    _check(input)
    x, st = _view(input)
    g, gst = _view(grad_out)
    C = x.shape[1]
    pdt = weight.dtype if weight is not None else x.dtype
    dx = dw = db = None
    if mask[0]:
        dx, ost = _empty_like(x)
    else:
        ost = st
    if mask[1]:
        dw = torch.empty((C,), dtype=pdt, device=x.device)
    if mask[2]:
        db = torch.empty((C,), dtype=pdt, device=x.device)
    sums_needed = bool(mask[1] or mask[2] or (mask[0] and train))
    if C == 0 or not (mask[0] or mask[1] or mask[2]):
        return dx, dw, db
    if x.numel() == 0:
        for t in (dw, db):
            if t is not None:
                t.zero_()
        return dx, dw, db
    p = _Plan(x, [st, gst, ost])
    acc, tiles = tl_float_acc(x.dtype), _tiles(p, x)
    one = p.resident(True)
    if one is not None:
        programs, rtiles = one
        launch(
            _bn_resident_bwd_kernel, (programs,), g, x, dx if dx is not None else x,
            weight if weight is not None else x, mean, stat,
            dw if dw is not None else x, db if db is not None else x,
            *p.shape_args(), *p.strides(0), *p.strides(1), *p.strides(2), float(eps),
            TRAIN=bool(train), IS_VAR=bool(is_var), HAS_W=weight is not None,
            DX=bool(mask[0]), DW=bool(mask[1]), DB=bool(mask[2]), G_AS_X=p.same(1),
            O_AS_X=p.same(2), ACC=acc, **rtiles,
        )  # fmt: skip
        return dx, dw, db
    co = p.coop(True) if train and sums_needed else None
    if co is not None:
        grid, per, split_p = co
        part = torch.empty((2, grid[1], C), dtype=float_acc(x.dtype), device=x.device)
        launch(
            _bn_coop_bwd_kernel, grid, g, x, dx if dx is not None else x,
            weight if weight is not None else x, mean, stat,
            dw if dw is not None else x, db if db is not None else x, part,
            arrival_counters("batch_norm_coop", x.device),
            *p.shape_args(), *p.strides(0), *p.strides(1), *p.strides(2), p.TN, p.items, per,
            float(p.N * p.S), float(eps),
            TRAIN=True, IS_VAR=bool(is_var), HAS_W=weight is not None, DX=bool(mask[0]),
            DW=bool(mask[1]), DB=bool(mask[2]), G_AS_X=p.same(1), O_AS_X=p.same(2),
            SPLIT_P=split_p, ST=p.stages(per), maxnreg=COOP_MAXNREG, **tiles,
        )  # fmt: skip
        return dx, dw, db
    sums = x
    if sums_needed:
        sums = torch.empty((2, C), dtype=float_acc(x.dtype), device=x.device)
        launch_sums(p, g, x, mean, stat, is_var, sums, dw, db, eps)
    if mask[0]:
        launch_dx(p, g, x, dx, weight, mean, stat, sums, train, is_var, float(p.N * p.S), eps)
    return dx, dw, db


def launch_sums(p, g, x, mean, stat, is_var, sums, dw, db, eps):
    """sums[0|1, c] = sum of dy and invstd * sum of dy * (x - mean) over each channel
    (dweight and dbias written where given); `p` plans (x, dy)."""
    merge = p.split > 1
    part = torch.empty((2, p.split, p.C), dtype=sums.dtype, device=x.device) if merge else x
    launch(
        _bn_bwd_sums_kernel, (p.cblocks, p.split), g, x, mean, stat, part,
        arrival_counters("batch_norm", x.device) if merge else x, sums,
        dw if dw is not None else x, db if db is not None else x,
        *p.shape_args(), *p.strides(0), *p.strides(1), p.TN, p.items, p.per, float(eps),
        IS_VAR=bool(is_var), DW=dw is not None, DB=db is not None, G_AS_X=p.same(1),
        MERGE=merge, SPLIT_P=p.split_p, ST=p.stages(p.per), maxnreg=p.maxnreg, **_tiles(p, x),
    )  # fmt: skip


def launch_dx(p, g, x, dx, weight, mean, stat, sums, train, is_var, count, eps):
    """dx from dy: training, from launch_sums' sums over `count` elements a channel; eval,
    dy * invstd * weight. `p` plans (x, dy, dx)."""
    launch(
        _bn_bwd_dx_kernel, p.apply_grid, g, x, dx, weight if weight is not None else x,
        mean, stat, sums, *p.shape_args(), *p.strides(0), *p.strides(1), *p.strides(2),
        p.TN, p.items, p.per_apply, float(count), float(eps),
        TRAIN=bool(train), IS_VAR=bool(is_var), HAS_W=weight is not None,
        G_AS_X=p.same(1), O_AS_X=p.same(2), ST=1, **_tiles(p, x),
    )  # fmt: skip
