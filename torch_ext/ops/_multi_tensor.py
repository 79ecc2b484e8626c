"""Multi-tensor kernels: one launch for up to `slots_for(...)` tensors of a
list (the `_foreach_*`, fused optimiser and AMP ops).

A kernel over lists takes each tensor's data pointer as its own kernel
argument (list k, slot j: `l{k}_{j}`), each slot's element count (`n_{j}`) and
the first program of each slot (`b_{j}`): a 1-D grid covers the blocks of all
slots back to back, and a program finds its slot by comparing its id with the
`b_{j}` (an unrolled chain of scalar compares, no table in device memory). So
a launch needs no host-to-device copy, no pointer table built per call and no
host sync, and a launch-plan replay re-reads only scalar arguments. Unused
slots of the last chunk repeat slot 0's pointers with 0 elements.

A program covers a chunk of BLOCK * ITERS elements of its slot, a loop of
ITERS blocks (fewer at a slot's end): the slot search is paid once per chunk,
not once per block (torch's multi_tensor_apply gives a block 64Ki elements the
same way). A 110-slot search per 1024-element block cost more than the block's
loads: _foreach_mul_ over Llama's 158M parameters ran at 0.7 TB/s on an H200.

The kernel source is generated per shape of the call (which operands are
lists, per-slot scalars, common scalars or 0-dim tensors; which lists are
stored to) and calls a scalar `@triton.jit` body: `body(*operands, *extras,
*constexprs)` returns one value or a tuple, and return value r is stored to
list `stores[r]` (None: not stored).

Operand kinds:
  L  a tensor list, loaded (l{k}_{j})
  P  a per-slot number (ScalarList: p{k}_{j})
  S  a number common to the launch (s{k})
  T  a 0-dim tensor common to the launch, loaded once (t{k})
  Q  a per-slot 0-dim tensor (optimiser steps: q{k}_{j}), loaded once
Output-only lists follow the L lists in pointer order.
"""

from __future__ import annotations

import functools

import torch
import triton.language as tl

from ..backends import spec
from ._common import block_for
from ._launch import cdiv, launch, next_pow2, pow2_at_most
from ._pointwise import load_generated

# Tensors per launch by the number of tensor lists a kernel takes: as many as
# torch's CUDA multi_tensor_apply takes (110 for one list down to 30 for five),
# which caps a launch at 320 blocks of 64Ki elements besides; with no such cap,
# a step launches no more kernels than torch's. The argument block stays small
# (five lists x 30 pointers = 1.2 KB; one list x 110 = 1.8 KB with the sizes).
_SLOTS_BY_DEPTH = (110, 64, 48, 36, 30)


def slot_cap(n_lists: int) -> int:
    """The most tensors a launch of a kernel over n_lists tensor lists takes (a driver
    may choose fewer: Triton's interpreter pays per slot and program)."""
    return (
        spec("multi_tensor_slots", n_lists)
        or _SLOTS_BY_DEPTH[min(max(n_lists, 1), len(_SLOTS_BY_DEPTH)) - 1]
    )


def slots_for(n_lists: int, n_tensors: int) -> int:
    """Tensors per launch for lists of n_tensors: the cap, or the next power of two
    for fewer. Each slot is two or three kernel arguments per list that a launch
    passes and a replay fills: one list of one tensor took 330 arguments on the GPU,
    and a chain of 110 slot compares per program."""
    return min(slot_cap(n_lists), next_pow2(max(n_tensors, 1)))


_ACC = {
    torch.float16: tl.float32,
    torch.bfloat16: tl.float32,
    torch.float32: tl.float32,
    torch.float64: tl.float64,
    torch.int8: tl.int8,
    torch.uint8: tl.uint8,
    torch.int16: tl.int16,
    torch.int32: tl.int32,
    torch.int64: tl.int64,
    torch.bool: tl.int8,
}


def acc_dtype(dtype: torch.dtype):
    """The dtype a body computes in for results of `dtype`."""
    return _ACC[dtype]


def slot_select(names_per_slot: list[str], k: int) -> list[str]:
    """Source lines choosing the slot of this program: after them, `sel_<name>`
    holds the chosen slot's value of each per-slot argument `<name>_{j}`."""
    lines = ["pid = tl.program_id(0)", "start = pid * 0"]
    lines += [f"sel_{nm} = {nm}_0" for nm in names_per_slot]
    lines.append("n = n_0.to(tl.int64)")
    for j in range(1, k):
        lines.append(f"if pid >= b_{j}:")
        lines += [f"    sel_{nm} = {nm}_{j}" for nm in names_per_slot]
        lines.append(f"    n = n_{j}.to(tl.int64)")
        lines.append(f"    start = b_{j} + pid * 0")
    return lines


def chunk_loop(body: list[str]) -> list[str]:
    """Source lines running `body` (lines that use `offs` and `mask`) over this
    program's chunk: after slot_select, a loop over at most ITERS blocks."""
    return [
        "base = (pid - start).to(tl.int64) * (BLOCK * ITERS)",
        "for it in range(0, tl.minimum(tl.cdiv(n - base, BLOCK), ITERS)):",
        "    offs = base + it * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n",
    ] + ["    " + ln for ln in body]


def signature(per_slot: list[str], common: list[str], k: int, constexprs: list[str]):
    params = [f"{nm}_{j}" for nm in per_slot for j in range(k)]
    params += [f"n_{j}" for j in range(k)] + [f"b_{j}" for j in range(1, k)]
    params += common
    no_spec = [f"n_{j}" for j in range(k)] + [f"b_{j}" for j in range(1, k)]
    params += [f"{c}: tl.constexpr" for c in constexprs]
    return params, no_spec


@functools.lru_cache(maxsize=None)
def pointwise_kernel(body_ref, kinds, n_out, stores, n_extra, body_constexprs, k):
    """The generated kernel for one call shape (see the module docstring).
    body_ref is "module:function" of the scalar body."""
    module, _, fn = body_ref.partition(":")
    n_lists = kinds.count("L") + n_out
    per_slot = [f"l{i}" for i in range(n_lists)]
    per_slot += [f"p{i}" for i, c in enumerate(kinds) if c == "P"]
    per_slot += [f"q{i}" for i, c in enumerate(kinds) if c == "Q"]
    common = [f"{c.lower()}{i}" for i, c in enumerate(kinds) if c in "ST"]  # in kinds order
    common += [f"e{i}" for i in range(n_extra)] + ["skip"]
    constexprs = ["HAS_SKIP", "ACC", "BLOCK", "ITERS", *body_constexprs]
    params, no_spec = signature(per_slot, common, k, constexprs)
    lines = [
        "if HAS_SKIP:",
        "    mask = mask & (tl.load(skip + offs * 0, mask=mask, other=1) == 0)",
    ]
    operands, li = [], 0
    for i, c in enumerate(kinds):
        if c == "L":
            lines.append(f"v{i} = tl.load(sel_l{li} + offs, mask=mask, other=0).to(ACC)")
            li += 1
        elif c == "P":
            lines.append(f"v{i} = (tl.zeros((BLOCK,), ACC) + sel_p{i}).to(ACC)")
        elif c == "S":
            lines.append(f"v{i} = (tl.zeros((BLOCK,), ACC) + s{i}).to(ACC)")
        elif c == "T":
            lines.append(f"v{i} = tl.load(t{i} + offs * 0, mask=mask, other=0).to(ACC)")
        else:  # Q
            lines.append(f"v{i} = tl.load(sel_q{i} + offs * 0, mask=mask, other=1).to(ACC)")
        operands.append(f"v{i}")
    call = ", ".join(operands + [f"e{i}" for i in range(n_extra)] + list(body_constexprs))
    lines.append(f"r = body({call})")
    if len(stores) == 1:
        lines.append("r = (r,)")
    for r, target in enumerate(stores):
        if target is not None:
            lines.append(
                f"tl.store(sel_l{target} + offs, "
                f"r[{r}].to(sel_l{target}.dtype.element_ty), mask=mask)"
            )
    name = f"multi_tensor_{fn}"  # the kernel's name in profiles: its body's
    lines = slot_select(per_slot, k) + chunk_loop(lines)
    src = module_source(module, fn, name, params, no_spec, lines)
    return getattr(load_generated(src, f"foreach_{fn}"), name)


def module_source(module, fn, name, params, no_spec, lines):
    body = "\n".join("    " + ln for ln in lines)
    return (
        "import triton\nimport triton.language as tl\n"
        + (f"from {module} import {fn} as body\n" if module else "")
        + f"\n\n@triton.jit(do_not_specialize={no_spec!r})\n"
        + f"def {name}(\n"
        + "".join(f"    {p},\n" for p in params)
        + "):\n"
        + body
        + "\n"
    )


def chunks(n: int, k: int):
    for lo in range(0, n, k):
        yield list(range(lo, min(lo + k, n)))


def slot_args(tensor_lists, idx, k):
    """Per-slot pointer arguments (list-major), the slot sizes and chunk starts,
    the launch's constexprs (BLOCK, ITERS) and its program count, for the tensors
    `idx` of each list."""
    numels = [tensor_lists[0][i].numel() for i in idx]
    block = block_for(max(numels + [1]))
    # blocks per chunk: up to the driver's cap (the interpreter's: 1), no more than
    # the largest tensor needs (small lists compile no loop of idle blocks)
    iters = pow2_at_most(cdiv(max(numels + [1]), block), spec("multi_tensor_iters") or 16)
    meta = {"BLOCK": block, "ITERS": iters}
    chunk = block * iters
    args = []
    for lst in tensor_lists:
        chosen = [lst[i] for i in idx]
        args += chosen + [chosen[0]] * (k - len(chosen))
    starts, total = [], 0
    for nm in numels:
        starts.append(total)
        total += cdiv(nm, chunk)
    sizes = numels + [0] * (k - len(numels))
    starts = starts[1:] + [total] * (k - len(numels))
    return args, sizes, starts, meta, total


def run_pointwise(
    body_ref,
    kinds,
    lists,
    stores,
    *,
    per_slot=(),
    common=(),
    extras=(),
    acc=tl.float32,
    skip=None,
    body_constexprs=(),
    per_slot_tensors=(),
):
    """Launches the kernel of this call shape over `lists` (L operands then
    output-only lists; equal lengths, dense, one device), slots_for(...)
    tensors per launch. per_slot: one sequence of numbers per P operand; per_slot_tensors:
    one list of 0-dim tensors per Q operand; common: the S and T operands in
    order; extras: numbers passed to the body after the operands."""
    n_out = len(lists) - kinds.count("L")
    names = tuple(c for c, _ in body_constexprs)
    k = slots_for(len(lists) + len(per_slot_tensors), len(lists[0]))
    kern = pointwise_kernel(body_ref, kinds, n_out, tuple(stores), len(extras), names, k)
    cvals = {c: v for c, v in body_constexprs}
    for idx in chunks(len(lists[0]), k):
        args, sizes, starts, meta, total = slot_args(lists, idx, k)
        if total == 0:
            continue
        for vals in per_slot:
            chosen = [vals[i] for i in idx]
            args += chosen + [chosen[0]] * (k - len(chosen))
        for ts in per_slot_tensors:
            chosen = [ts[i] for i in idx]
            args += chosen + [chosen[0]] * (k - len(chosen))
        args += sizes + starts + list(common) + list(extras)
        args.append(skip if skip is not None else lists[0][idx[0]])
        launch(
            kern,
            (total,),
            *args,
            HAS_SKIP=skip is not None,
            ACC=acc,
            **meta,
            **cvals,
        )


# ---------------------------------------------------------------------------
# reductions: one partial per program, then one program per slot


@functools.lru_cache(maxsize=None)
def reduce_kernels(k):
    """(partials kernel, finish kernel) of the per-tensor reductions: MODE 0
    sum|x|^p, 1 max|x|, 2 min|x|, 3 count of non-zeros, 4 max x, 5 sum x^2."""
    params, no_spec = signature(["l0"], ["part", "p"], k, ["MODE", "BLOCK", "ITERS"])
    # per lane: a running sum (MODE 0, 3, 5) or extreme (1, 2, 4) over the chunk
    lines = (
        slot_select(["l0"], k)
        + [
            "if (sel_l0.dtype.element_ty == tl.float64) | sel_l0.dtype.element_ty.is_int():",
            "    acc = tl.zeros((BLOCK,), tl.float64)",
            "else:",
            "    acc = tl.zeros((BLOCK,), tl.float32)",
            "if MODE == 2:",
            "    acc = acc + float('inf')",
            "if MODE == 4:",
            "    acc = acc - float('inf')",
        ]
        + chunk_loop(
            [
                "x = tl.load(sel_l0 + offs, mask=mask, other=0).to(acc.dtype)",
                "ax = tl.abs(x)",
                "if MODE == 0:",
                "    pos = mask & (ax > 0)",
                "    acc += tl.where(pos, tl.exp2(p * tl.log2(tl.where(pos, ax, 1.0))), 0.0)",
                "elif MODE == 1:",
                "    acc = tl.maximum(acc, tl.where(mask, ax, 0.0))",
                "elif MODE == 2:",
                "    acc = tl.minimum(acc, tl.where(mask, ax, float('inf')))",
                "elif MODE == 3:",
                "    acc += tl.where(mask & (x != 0), 1.0, 0.0)",
                "elif MODE == 4:",
                "    acc = tl.maximum(acc, tl.where(mask, x, float('-inf')))",
                "else:",
                "    acc += tl.where(mask, x * x, 0.0)",
            ]
        )
        + [
            "if (MODE == 1) | (MODE == 4):",
            "    r = tl.max(acc, axis=0)",
            "elif MODE == 2:",
            "    r = tl.min(acc, axis=0)",
            "else:",
            "    r = tl.sum(acc, axis=0)",
            "tl.store(part + pid, r)",
        ]
    )
    partials = module_source("", "", "multi_tensor_reduce_partials", params, no_spec, lines)
    # finish: program j reduces partials [b_j, b_{j+1}) into slot j's output
    fparams = [f"o_{j}" for j in range(k)] + [f"b_{j}" for j in range(k + 1)]
    fparams += ["part", "p", "MODE: tl.constexpr", "RBLOCK: tl.constexpr"]
    flines = ["pid = tl.program_id(0)", "out = o_0", "lo = b_0 + pid * 0", "hi = b_1 + pid * 0"]
    for j in range(1, k):
        flines += [f"if pid == {j}:", f"    out = o_{j}", f"    lo = b_{j} + pid * 0"]
        flines.append(f"    hi = b_{j + 1} + pid * 0")
    flines += [
        "acc = tl.zeros((RBLOCK,), tl.float32).to(part.dtype.element_ty)",
        "if MODE == 2:",
        "    acc = acc + float('inf')",
        "if MODE == 4:",
        "    acc = acc - float('inf')",
        "for i in range(lo, hi, RBLOCK):",
        "    o = i + tl.arange(0, RBLOCK)",
        "    m = o < hi",
        "    if MODE == 1:",
        "        acc = tl.maximum(acc, tl.load(part + o, mask=m, other=0))",
        "    elif MODE == 2:",
        "        acc = tl.minimum(acc, tl.load(part + o, mask=m, other=float('inf')))",
        "    elif MODE == 4:",
        "        acc = tl.maximum(acc, tl.load(part + o, mask=m, other=float('-inf')))",
        "    else:",
        "        acc = acc + tl.load(part + o, mask=m, other=0)",
        "if MODE == 1:",
        "    r = tl.max(acc, axis=0)",
        "elif MODE == 2:",
        "    r = tl.min(acc, axis=0)",
        "elif MODE == 4:",
        "    r = tl.max(acc, axis=0)",
        "else:",
        "    r = tl.sum(acc, axis=0)",
        "if MODE == 0:",
        "    r = tl.where(r > 0, tl.exp2(tl.log2(tl.where(r > 0, r, 1.0)) / p), 0.0)",
        "if MODE == 5:",
        "    r = tl.sqrt(r)",
        "tl.store(out, r.to(out.dtype.element_ty))",
    ]
    fno = [f"b_{j}" for j in range(k + 1)]
    finish = module_source("", "", "multi_tensor_reduce_finish", fparams, fno, flines)
    return (
        load_generated(partials, "foreach_partials").multi_tensor_reduce_partials,
        load_generated(finish, "foreach_finish").multi_tensor_reduce_finish,
    )


def run_reduce(tensors, outs, mode, p=2.0):
    """outs[i] (0-dim) = the reduction `mode` of tensors[i] (dense, one device)."""
    k = slots_for(1, len(tensors))
    partials, finish = reduce_kernels(k)
    for idx in chunks(len(tensors), k):
        args, sizes, starts, meta, total = slot_args([tensors], idx, k)
        if total == 0:
            # every tensor empty: the reduction of nothing
            for i in idx:
                outs[i].fill_(float("-inf") if mode == 4 else 0.0)
            continue
        # float64 partials for float64 and integer inputs (_foreach_max of int64)
        wide = not tensors[idx[0]].dtype.is_floating_point or tensors[idx[0]].dtype == torch.float64
        part = torch.empty(
            total, dtype=torch.float64 if wide else torch.float32, device=tensors[idx[0]].device
        )
        launch(partials, (total,), *args, *sizes, *starts, part, float(p), MODE=mode, **meta)
        chosen = [outs[i] for i in idx]
        chosen += [chosen[0]] * (k - len(chosen))
        bounds = [0] + starts + [total]
        launch(
            finish,
            (len(idx),),
            *chosen,
            *bounds,
            part,
            float(p),
            MODE=mode,
            RBLOCK=min(1024, max(16, 1 << (total - 1).bit_length())),
        )
