"""Multi-tensor `_foreach_*` ops: torch.optim's foreach path, clip_grad_norm_.

Each op is a scalar `@triton.jit` body below, run over the lists by the
multi-tensor kernels of _multi_tensor.py (up to 110 tensors per launch). The
aten overloads are declared in foreach_ops.py; this file holds the bodies and
the host side every overload shares: checks (lengths, one device), type
promotion per index as torch's per-tensor ops do, grouping of indices by
dtypes (a list of mixed dtypes runs one launch series per dtype group), and
non-dense tensors (through contiguous copies).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from torch._prims_common import (
    ELEMENTWISE_TYPE_PROMOTION_KIND,
    elementwise_dtypes,
    is_non_overlapping_and_dense_or_false as _non_overlapping_and_dense,
)

from . import _math
from ._multi_tensor import acc_dtype, run_pointwise, run_reduce

_HERE = __name__


# ---- bodies -----------------------------------------------------------------


@triton.jit
def add(a, b, alpha):
    return a + b * alpha


@triton.jit
def sub(a, b, alpha):
    return a - b * alpha


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def div(a, b):
    return a / b


@triton.jit
def maximum(a, b):
    return tl.where((a != a) | (b != b), a + b, tl.where(a < b, b, a))


@triton.jit
def minimum(a, b):
    return tl.where((a != a) | (b != b), a + b, tl.where(a > b, b, a))


@triton.jit
def _int_pow(a, e):
    # Square and multiply: exact for integers (a float pow rounds large powers).
    r = tl.full(a.shape, 1, a.dtype)
    base = a
    k = tl.where(e < 0, 0, e)
    for _ in tl.static_range(63):
        r = tl.where((k & 1) != 0, r * base, r)
        base = base * base
        k = k >> 1
    neg = tl.where(a == 1, 1, tl.where(a == -1, tl.where((e & 1) != 0, -1, 1), 0))
    return tl.where(e < 0, neg.to(a.dtype), r)


@triton.jit
def pow(a, b):
    b = b.to(a.dtype)
    if a.dtype.is_floating():
        r = _math.pow(a, b)
    else:
        r = _int_pow(a, b)
    return r


@triton.jit
def pow_scalar_base(a, b):
    return pow(b * 0 + a, b)


@triton.jit
def addcmul(a, b, c, v):
    return a + v * b * c


@triton.jit
def addcdiv(a, b, c, v):
    return a + v * (b / c)


@triton.jit
def lerp(a, b, w):
    d = b - a
    return tl.where(tl.abs(w) < 0.5, a + w * d, b - d * (1.0 - w))


@triton.jit
def copy(a):
    return a


@triton.jit
def zero(a):
    return tl.zeros_like(a)


@triton.jit
def sqrt(a):
    return tl.sqrt(a)


@triton.jit
def rsqrt(a):
    return 1.0 / tl.sqrt(a)


@triton.jit
def neg(a):
    return -a


@triton.jit
def abs(a):
    return tl.where(a < 0, -a, a)


@triton.jit
def exp(a):
    return _math.exp(a)


@triton.jit
def expm1(a):
    return _math.expm1(a)


@triton.jit
def log(a):
    return tl.log(a)


@triton.jit
def log2(a):
    return tl.log2(a)


@triton.jit
def log10(a):
    return tl.log(a) * 0.4342944819032518


@triton.jit
def log1p(a):
    return _math.log1p(a)


@triton.jit
def reciprocal(a):
    return 1.0 / a


@triton.jit
def sign(a):
    return tl.where(a > 0, 1, tl.where(a < 0, -1, 0)).to(a.dtype)


@triton.jit
def sigmoid(a):
    return 1.0 / (1.0 + _math.exp(-a))


@triton.jit
def sin(a):
    return tl.sin(a)


@triton.jit
def cos(a):
    return tl.cos(a)


@triton.jit
def tanh(a):
    return _math.tanh(a)


@triton.jit
def erf(a):
    return tl.erf(a)


@triton.jit
def floor(a):
    if a.dtype.is_floating():
        a = tl.floor(a)
    return a


@triton.jit
def ceil(a):
    if a.dtype.is_floating():
        a = tl.ceil(a)
    return a


@triton.jit
def trunc(a):
    if a.dtype.is_floating():
        a = tl.where(a < 0, tl.ceil(a), tl.floor(a))
    return a


@triton.jit
def round(a):
    if a.dtype.is_floating():
        a = _math.rint(a)
    return a


@triton.jit
def frac(a):
    return a - tl.where(a < 0, tl.ceil(a), tl.floor(a))


# body -> type promotion of the per-tensor op: "default" (torch's), "keep" (the
# target's dtype: copy, zero); bodies not named promote integers to float.
PROMOTION = {
    "add": "default",
    "sub": "default",
    "mul": "default",
    "div": "float",
    "maximum": "default",
    "minimum": "default",
    "pow": "default",
    "pow_scalar_base": "default",
    "addcmul": "default",
    "addcdiv": "float",
    "lerp": "default",
    "copy": "keep",
    "zero": "keep",
    "neg": "default",
    "abs": "default",
    "sign": "default",
    "floor": "default",
    "ceil": "default",
    "trunc": "default",
    "round": "default",
    "frac": "default",
}


# ---- host side ---------------------------------------------------------------


def _describe(x):
    if isinstance(x, torch.Tensor):
        return (x.dtype, x.dim() == 0)
    return float if isinstance(x, float) else type(x)  # a CallNumber is a float


@functools.lru_cache(maxsize=None)
def _promoted(promotion, described):
    """The result dtype of the per-tensor op on operands described as
    (dtype, is 0-dim) or a Python number type."""
    args = []
    for d in described:
        if isinstance(d, tuple):
            args.append(torch.empty((), dtype=d[0]) if d[1] else torch.empty(1, dtype=d[0]))
        else:
            args.append(d(1))
    kind = (
        ELEMENTWISE_TYPE_PROMOTION_KIND.INT_TO_FLOAT
        if promotion == "float"
        else ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT
    )
    return elementwise_dtypes(*args, type_promotion_kind=kind)[1]


def _check_lengths(op, lists):
    n = len(lists[0])
    for lst in lists[1:]:
        if len(lst) != n:
            raise ValueError(
                f"torch_ext: {op}: the tensor lists must have one length, got {n} and {len(lst)}"
            )
    return n


def _check_devices(op, lists, device):
    for k, lst in enumerate(lists):
        for i, t in enumerate(lst):
            if t.device != device:
                raise RuntimeError(
                    f"torch_ext: {op}: all tensors must be on one device ({device}), "
                    f"but tensor {i} of list {k} is on {t.device}"
                )


def _dense(tensors):
    """Whether the tensors can be run as flat ranges of memory, element for element."""
    first = tensors[0]
    if all(t.is_contiguous() for t in tensors):
        return True
    return all(t.stride() == first.stride() and _non_overlapping_and_dense(t) for t in tensors)


def apply(op, body, kinds, operands, variant, out=None, extras=()):
    """Runs `body` over the operands (in `kinds` order: tensor lists for L,
    number lists for P, numbers for S, 0-dim tensors for T); variant
    "inplace" writes the first list, "functional" returns new tensors, "out"
    writes `out`."""
    lists = [o for o, c in zip(operands, kinds) if c == "L"]
    n = _check_lengths(op, lists + ([out] if out is not None else []))
    for o, c in zip(operands, kinds):
        if c == "P" and len(o) != n:
            raise ValueError(f"torch_ext: {op}: expected {n} scalars, got {len(o)}")
    if n == 0:
        return [] if variant == "functional" else None
    device = lists[0][0].device
    _check_devices(op, lists + ([out] if out is not None else []), device)
    operands = list(operands)
    kinds = list(kinds)
    for j, (o, c) in enumerate(zip(operands, kinds)):
        if c == "T":
            if o.dim() != 0:
                raise ValueError(
                    f"torch_ext: {op}: the scalar tensor must be 0-dim, got {o.dim()} dims"
                )
            if o.device != device:
                if o.device.type != "cpu":
                    raise RuntimeError(
                        f"torch_ext: {op}: the scalar tensor is on {o.device}, "
                        f"the lists on {device}"
                    )
                operands[j], kinds[j] = o.item(), "S"  # a CPU value: no device sync
    _check_dtypes(op, body, lists)
    lists, bcast = _broadcast(op, lists, variant)
    promotion = PROMOTION.get(body, "float")
    scal = [o for o, c in zip(operands, kinds) if c in "ST"]
    groups = {}
    for i in range(n):
        desc = [_describe(lst[i]) for lst in lists]
        for o, c in zip(operands, kinds):
            if c == "P":
                desc.append(_describe(o[i]))
        desc += [_describe(s) for s in scal]
        if promotion == "keep":
            res = (out[i] if out is not None else lists[0][i]).dtype
        else:
            res = _promoted(promotion, tuple(desc))
        key = (tuple(lst[i].dtype for lst in lists), res, bcast[i])
        groups.setdefault(key, []).append(i)
    results = [None] * n
    if variant == "inplace":
        targets = lists[0]
    elif variant == "out":
        targets = out
    else:
        targets = results
    for (dtypes, res, scalar_lists), idx in groups.items():
        if variant == "functional":
            for i in idx:
                results[i] = torch.empty_like(lists[0][i], dtype=res)
        elif variant == "inplace" and not _can_cast(res, targets[idx[0]].dtype):
            raise RuntimeError(
                f"torch_ext: {op}: result type {_short(res)} can't be cast to the "
                f"desired output type {_short(targets[idx[0]].dtype)}"
            )
        _run_group(body, kinds, operands, lists, targets, idx, res, extras, scalar_lists)
    return results if variant == "functional" else None


# bodies torch's per-tensor ops define for floating types only
_FLOATING_ONLY = {"lerp", "frac"}


def _check_dtypes(op, body, lists):
    """The dtype refusals of torch's per-tensor ops, with their messages."""
    if body in _FLOATING_ONLY:
        for t in lists[0]:
            if not t.is_floating_point():
                raise NotImplementedError(
                    f"torch_ext: {op}: not implemented for '{_short(t.dtype)}' "
                    "(floating point tensors only, as on the CPU)"
                )
    if body == "addcdiv":
        for a, b in zip(lists[1], lists[2]):
            if not a.is_floating_point() and not b.is_floating_point():
                raise RuntimeError(
                    f"torch_ext: {op}: integer division with addcdiv is no longer supported; "
                    "use (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype)"
                )


def _broadcast(op, lists, variant):
    """Per index, torch's broadcasting of the list operands: a one-element
    tensor beside a larger first operand becomes a per-slot 0-dim operand (the
    capturable optimisers' bias corrections); other shape mismatches are
    expanded into contiguous copies. Returns the lists and, per index, which
    lists are per-slot scalars."""
    n = len(lists[0])
    flags = [(False,) * len(lists)] * n
    new = None
    for i in range(n):
        shapes = [lst[i].shape for lst in lists]
        if all(sh == shapes[0] for sh in shapes):
            continue
        try:
            shape = torch.broadcast_shapes(*shapes)
        except RuntimeError as e:
            raise RuntimeError(f"torch_ext: {op}: tensors {i} of the lists: {e}") from None
        if variant == "inplace" and shape != shapes[0]:
            raise RuntimeError(
                f"torch_ext: {op}: tensor {i}: the result's shape {tuple(shape)} does not "
                f"match self's {tuple(shapes[0])}"
            )
        if new is None:
            new = [list(lst) for lst in lists]
        first_ok = shapes[0] == shape
        flags[i] = tuple(
            k > 0 and first_ok and lists[k][i].numel() == 1 and shapes[k] != shape
            for k in range(len(lists))
        )
        for k in range(len(lists)):
            if shapes[k] != shape and not flags[i][k]:
                new[k][i] = torch.broadcast_to(lists[k][i], shape).contiguous()
    return (new if new is not None else lists), flags


def _short(dtype):
    return str(dtype).replace("torch.", "").capitalize()


def _can_cast(src, dst):
    return torch.can_cast(src, dst)


def _run_group(body, kinds, operands, lists, targets, idx, res, extras, scalar_lists):
    # lists of one-element tensors beside larger ones: per-slot scalars (Q)
    q_lists = [[lst[i].reshape(()) for i in idx] for lst, q in zip(lists, scalar_lists) if q]
    lists = [lst for lst, q in zip(lists, scalar_lists) if not q]
    it = iter(scalar_lists)
    kinds = [("Q" if next(it) else "L") if c == "L" else c for c in kinds]
    sub = [[lst[i] for i in idx] for lst in lists]
    tgt = [targets[i] for i in idx]
    dense = all(_dense([s[j] for s in sub] + [tgt[j]]) for j in range(len(idx)))
    if not dense:
        sub = [[t.contiguous() for t in s] for s in sub]
        work = [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in tgt]
    else:
        work = tgt
    # the stored list: in place into list 0 when it is the target, else an extra list
    in_place = dense and work is not None and all(a is b for a, b in zip(work, sub[0]))
    run_lists = sub if in_place else sub + [work]
    store = 0 if in_place else len(sub)
    per_slot = [[o[i] for i in idx] for o, c in zip(operands, kinds) if c == "P"]
    common = [o for o, c in zip(operands, kinds) if c in "ST"]
    run_pointwise(
        f"{_HERE}:{body}",
        "".join(kinds),
        run_lists,
        (store,),
        per_slot=per_slot,
        common=common,
        extras=extras,
        acc=acc_dtype(res),
        per_slot_tensors=q_lists,
    )
    if not dense:
        for w, t in zip(work, tgt):
            t.copy_(w)


# ---- reductions --------------------------------------------------------------


def norm(op, tensors, ord, dtype, out=None):
    """_foreach_norm: the ord-norm of each tensor, as a 0-dim tensor."""
    n = _check_lengths(op, [tensors] + ([out] if out is not None else []))
    if n == 0:
        return []
    _check_devices(op, [tensors], tensors[0].device)
    p = float(ord)
    if p == 2.0:
        mode = 5
    elif p == float("inf"):
        mode = 1
    elif p == float("-inf"):
        mode = 2
    elif p == 0.0:
        mode = 3
    else:
        mode = 0
    results = out if out is not None else [None] * n
    groups = {}
    for i, t in enumerate(tensors):
        if mode in (1, 2) and t.numel() == 0:
            raise RuntimeError(
                f"torch_ext: {op}: cannot compute the {ord} norm of the empty tensor {i} "
                "(the operation has no identity)"
            )
        if not t.is_floating_point():
            raise RuntimeError(
                f"torch_ext: {op}: expected floating point tensors, got {_short(t.dtype)}"
            )
        groups.setdefault(t.dtype, []).append(i)
    for src_dtype, idx in groups.items():
        rdtype = dtype if dtype is not None else src_dtype
        ts = [tensors[i] if _dense([tensors[i]]) else tensors[i].contiguous() for i in idx]
        if rdtype == torch.float64 and src_dtype != rdtype:
            ts = [t.to(rdtype) for t in ts]  # the partials are float32 unless the input is float64
        outs = [torch.empty((), dtype=rdtype, device=ts[0].device) for _ in idx]
        run_reduce(ts, outs, mode, p)
        for i, o in zip(idx, outs):
            if out is None:
                results[i] = o
            else:
                out[i].copy_(o)
    return results if out is None else None


def max_(op, tensors, out=None):
    n = _check_lengths(op, [tensors] + ([out] if out is not None else []))
    if n == 0:
        return []
    _check_devices(op, [tensors], tensors[0].device)
    for i, t in enumerate(tensors):
        if t.numel() == 0:
            raise RuntimeError(f"torch_ext: {op}: tensor {i} is empty and has no maximum")
    groups = {}
    for i, t in enumerate(tensors):
        groups.setdefault(t.dtype, []).append(i)
    results = [None] * n
    for dt, idx in groups.items():
        if dt == torch.bool:
            raise NotImplementedError(f"torch_ext: {op} does not take bool tensors")
        ts = [tensors[i] if _dense([tensors[i]]) else tensors[i].contiguous() for i in idx]
        outs = [torch.empty((), dtype=dt, device=ts[0].device) for _ in idx]
        run_reduce(ts, outs, 4)
        for i, o in zip(idx, outs):
            results[i] = o
    if out is not None:
        for o, r in zip(out, results):
            o.copy_(r)
        return None
    return results
