"""Sizes as expressions: one launch plan for a range of shapes (csrc/launch/PlanShapes.cpp).

An op declared `@kernel(..., shapes=True)` reads its operands' sizes and strides with
`sizes(t)`, `strides(t)` and `numel(t)`, and makes its outputs with `empty(...)`. Outside
a recording these are plain ints and tensors. While C++ records a size-generic plan for
the op, they are `Sym` ints: ints that carry their expression over the call's variables
(operand k's size d is variable 16 k + d, its stride d variable 16 k + 8 + d).

Arithmetic (+, -, *, //, %) keeps the expression; every decision on a value (a
comparison, `bool`, `bit_length`) becomes a guard, a fact the plan replays under; any
other use (`int()`, `float()`, `str()`, hashing, indexing a list with it, passing it to a
torch function) pins the value: the plan then holds for that value only. `launch()` takes
Syms as kernel arguments and grid sizes, and adds the guards of Triton's integer
specialisations (value 1, divisibility by 16, 32-bit range).

What Python reads of a size without going through here (`t.shape` in a nested op, a
size C++ used) is a constant in the plan: a second recording at other sizes then
differs, and the shape class ends (launch plans keep exact keys for the op).
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from typing import Any

import torch

VARS_PER_OPERAND = 16  # csrc/launch/PlanImpl.h kVarsPerOperand
VAR_DIMS = 8

# Expression trees: ("c", value), ("v", index), (op, a, b), ("neg", a); the postfix code
# sent to C++ uses these op numbers (Expr::Op).
_CODE = {"c": 0, "v": 1, "+": 2, "-": 3, "*": 4, "//": 5, "%": 6, "neg": 7}
_NEGATIVE, _ZERO = 0, 1  # Guard::Kind


def _c_ext():
    return sys.modules.get("torch_ext._C")


class _Context:
    """The expression table of the recording with serial `serial`."""

    def __init__(self, c_ext, serial):
        self.c_ext, self.serial = c_ext, serial
        self.ids: dict[tuple, int] = {}
        self.tensors: dict[int, tuple[torch.Tensor, tuple, tuple]] = {}

    def expr_id(self, tree) -> int:
        found = self.ids.get(tree)
        if found is None:
            code: list[tuple[int, int]] = []
            _postfix(tree, code)
            found = self.c_ext._plan_sym_expr(code)
            self.ids[tree] = found
        return found


_local = threading.local()  # recordings are per thread (autograd's threads record too)


def context() -> _Context | None:
    """The size-generic recording in progress on this thread, or None."""
    c_ext = _c_ext()
    if c_ext is None or not hasattr(c_ext, "_plan_symbolic"):
        return None
    serial = c_ext._plan_symbolic()
    if not serial:
        return None
    ctx = getattr(_local, "ctx", None)
    if ctx is None or ctx.serial != serial:
        ctx = _local.ctx = _Context(c_ext, serial)
    return ctx


def _postfix(tree, code):
    op = tree[0]
    if op in ("c", "v"):
        code.append((_CODE[op], tree[1]))
        return
    for sub in tree[1:]:
        _postfix(sub, code)
    code.append((_CODE[op], 0))


def _tree(x):
    return x.expr if type(x) is Sym else ("c", int(x))


def _value(x):
    return x.v if type(x) is Sym else x


def guard(tree, kind, holds):
    """Records that `tree < 0` (kind 0) or `tree == 0` (kind 1) was `holds`."""
    ctx = context()
    if ctx is not None:
        ctx.c_ext._plan_sym_guard(ctx.expr_id(tree), kind, bool(holds))


def _is_int(x):
    return isinstance(x, int)  # Sym, int, bool


class Sym(int):
    """An int whose value is `expr` over the recording call's sizes and strides."""

    def __new__(cls, value, expr):
        self = int.__new__(cls, value)
        self.v = int.__int__(self)
        self.expr = expr
        return self

    def pin(self):
        """The plain value; the plan holds for this value only."""
        guard(("-", self.expr, ("c", self.v)), _ZERO, True)
        return self.v

    # -- arithmetic that keeps the expression
    def _arith(self, op, other, reflected=False):
        if not _is_int(other):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        av, bv = _value(a), _value(b)
        if op in ("//", "%"):
            if type(b) is Sym:
                guard(b.expr, _ZERO, False)  # the divisor stays non-zero
            if bv == 0:
                raise ZeroDivisionError("integer division or modulo by zero")
            value = av // bv if op == "//" else av % bv
        else:
            value = av + bv if op == "+" else av - bv if op == "-" else av * bv
        return Sym(value, (op, _tree(a), _tree(b)))

    def __neg__(self):
        return Sym(-self.v, ("neg", self.expr))

    def __pos__(self):
        return self

    def __abs__(self):
        return -self if self < 0 else self

    # -- decisions: guards
    def _compare(self, other, op):
        if not _is_int(other):
            return getattr(self.pin(), op)(other)
        a, b = self.expr, _tree(other)
        av, bv = self.v, _value(other)
        if op in ("__eq__", "__ne__"):
            equal = av == bv
            guard(("-", a, b), _ZERO, equal)
            return equal if op == "__eq__" else not equal
        if op == "__lt__":  # a < b
            tree, result = ("-", a, b), av < bv
        elif op == "__le__":  # a - b - 1 < 0
            tree, result = ("-", ("-", a, b), ("c", 1)), av <= bv
        elif op == "__gt__":  # b - a < 0
            tree, result = ("-", b, a), av > bv
        else:  # a >= b: b - a - 1 < 0
            tree, result = ("-", ("-", b, a), ("c", 1)), av >= bv
        guard(tree, _NEGATIVE, result)
        return result

    def __bool__(self):
        guard(self.expr, _ZERO, self.v == 0)
        return self.v != 0

    def bit_length(self):
        if self.v <= 0:
            return self.pin().bit_length()
        k = self.v.bit_length()  # 2**(k-1) <= v < 2**k
        guard(("-", self.expr, ("c", 1 << (k - 1))), _NEGATIVE, False)
        guard(("-", self.expr, ("c", 1 << k)), _NEGATIVE, True)
        return k

    # -- any other use of the value pins it
    def __hash__(self):
        return hash(self.pin())

    def __index__(self):
        return self.pin()

    def __int__(self):
        return self.pin()

    def __float__(self):
        return float(self.pin())

    def __repr__(self):
        return repr(self.pin())

    __str__ = __repr__

    def __format__(self, spec):
        return format(self.pin(), spec)

    def __reduce__(self):
        return (int, (self.pin(),))


def _arithmetic(op, reflected):
    def method(self, other):
        return self._arith(op, other, reflected)

    return method


def _comparison(name):
    def method(self, other):
        return self._compare(other, name)

    method.__name__ = name
    return method


for _name, _op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("floordiv", "//"), ("mod", "%")):
    setattr(Sym, f"__{_name}__", _arithmetic(_op, False))
    setattr(Sym, f"__r{_name}__", _arithmetic(_op, True))
for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Sym, _name, _comparison(_name))


def _pinning(name):
    def method(self, *args):
        return getattr(self.pin(), name)(*(_value(a) for a in args))

    method.__name__ = name
    return method


for _name in (
    "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__and__", "__rand__", "__or__",
    "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__",
    "__rrshift__", "__invert__", "__round__", "__trunc__", "__floor__", "__ceil__",
    "__divmod__", "__rdivmod__", "bit_count", "to_bytes", "conjugate", "as_integer_ratio",
    "is_integer",
):  # fmt: skip
    if hasattr(int, _name):
        setattr(Sym, _name, _pinning(_name))


def plain(x: Any) -> Any:
    """x with Syms pinned to their values (ints, lists and tuples of them)."""
    if type(x) is Sym:
        return x.pin()
    if isinstance(x, (list, tuple)):
        return type(x)(plain(e) for e in x)
    return x


# ---- what ops read: sizes, strides, numel -------------------------------------------


def _operand_vars(t: torch.Tensor):
    ctx = context()
    if ctx is None:
        return None, None
    known = ctx.tensors.get(id(t))
    if known is not None and known[0] is t:
        return known[1], known[2]
    k = ctx.c_ext._plan_sym_operand(t)
    if k < 0:
        return None, None
    base = k * VARS_PER_OPERAND
    shape = tuple(Sym(s, ("v", base + d)) if d < VAR_DIMS else s for d, s in enumerate(t.shape))
    stride = tuple(
        Sym(s, ("v", base + VAR_DIMS + d)) if d < VAR_DIMS else s for d, s in enumerate(t.stride())
    )
    return shape, stride


def sizes(t: torch.Tensor) -> tuple:
    """t.shape; Syms for an operand (or a tensor from `empty`) while recording."""
    shape, _ = _operand_vars(t)
    return tuple(t.shape) if shape is None else shape


def strides(t: torch.Tensor) -> tuple:
    """t.stride(); Syms for an operand (or a tensor from `empty`) while recording."""
    _, stride = _operand_vars(t)
    return tuple(t.stride()) if stride is None else stride


def scalar_operand(k: int, value: int) -> int:
    """The value of the TensorIterator's operand k, an integer CPU scalar: a variable of
    the iterator path's shape class (arange(n) + past_length replays for every length)."""
    ctx = context()
    if ctx is None:
        return value
    var = ctx.c_ext._plan_sym_scalar(k, value)
    return Sym(value, ("v", var)) if var >= 0 else value


def numel(t: torch.Tensor) -> int:
    return math.prod(sizes(t))


def max_offset(t: torch.Tensor) -> int:
    """The farthest element t's view reaches from its first, in elements (whether its
    offsets need 64-bit arithmetic)."""
    return sum((s - 1) * abs(st) for s, st in zip(sizes(t), strides(t)))


def expand_strides(t: torch.Tensor, shape) -> tuple:
    """Strides of t broadcast to `shape` (0 where t's dimension is broadcast)."""
    own, st = sizes(t), strides(t)
    lead = len(shape) - len(own)
    out = []
    for d, n in enumerate(shape):
        if d < lead:
            out.append(0)
        else:
            s = own[d - lead]
            if s != n and s != 1:
                raise ValueError(
                    f"torch_ext: a tensor of shape {tuple(plain(own))} does not broadcast "
                    f"to {tuple(plain(shape))}"
                )
            out.append(0 if s == 1 and n != 1 else st[d - lead])
    return tuple(out)


def _row_major(shape) -> list:
    """Contiguous strides of `shape` (expressions where its sizes are)."""
    stride = [1] * len(shape)
    for j in range(len(shape) - 2, -1, -1):
        stride[j] = stride[j + 1] * shape[j + 1]
    return stride


def empty(shape, dtype: torch.dtype, device: torch.device, order=None) -> torch.Tensor:
    """torch.empty(shape) with its dimensions laid out in `order` (outermost first;
    default: row-major), whose sizes and strides stay expressions in a recording."""
    n = len(shape)
    order = list(range(n)) if order is None else list(order)
    physical = [shape[i] for i in order]
    buf = torch.empty([_value(s) for s in physical], dtype=dtype, device=device)
    t = buf if order == list(range(n)) else buf.permute([order.index(i) for i in range(n)])
    ctx = context()
    if ctx is None or not any(type(s) is Sym for s in shape):
        return t
    inner = _row_major(physical)  # as torch.empty lays them out
    stride = [0] * n
    for j, i in enumerate(order):
        stride[i] = inner[j]
    if list(t.stride()) != [_value(s) for s in stride] and buf.numel():
        ctx.c_ext._plan_unreplayable("symbolic sizes")
        return t
    shape = tuple(shape)
    ctx.tensors[id(t)] = (t, shape, tuple(stride))
    ids = [ctx.expr_id(_tree(s)) if type(s) is Sym else -1 for s in shape]
    sids = [ctx.expr_id(_tree(s)) if type(s) is Sym else -1 for s in stride]
    ctx.c_ext._plan_sym_tensor(t, ids, sids)
    if buf.numel():
        nbytes = math.prod(physical) * buf.element_size()
        if type(nbytes) is Sym:
            ctx.c_ext._plan_sym_alloc(buf.data_ptr(), ctx.expr_id(nbytes.expr))
    return t


def view(t: torch.Tensor, shape) -> torch.Tensor:
    """t.view(shape) of a contiguous t, whose sizes and strides stay expressions in a
    recording."""
    v = t.view([_value(s) for s in shape])
    ctx = context()
    if ctx is None or not any(type(s) is Sym for s in shape):
        return v
    stride = _row_major(shape)
    if not t.is_contiguous() or list(v.stride()) != [_value(s) for s in stride]:
        ctx.c_ext._plan_unreplayable("symbolic sizes")
        return v
    ctx.tensors[id(v)] = (v, tuple(shape), tuple(stride))
    return v


# ---- launches and results -------------------------------------------------------------

_INT32 = (-(2**31), 2**31)


def _specialisation_guards(x: Sym, specialize: bool):
    """Guards for what Triton compiles into a kernel from an int argument's value."""
    lo, hi = _INT32
    _ = (x >= lo, x < hi)  # the parameter's type (i32 or i64)
    if specialize:
        _ = (x == 1, x % 16 == 0)


def has_syms(grid, args, kwargs) -> bool:
    return (
        any(type(a) is Sym for a in args)
        or any(type(v) is Sym for v in kwargs.values())
        or (isinstance(grid, (tuple, list)) and any(type(g) is Sym for g in grid))
    )


def launch_args(kernel, grid, args, kwargs):
    """(grid, args, kwargs, grid ids, {parameter name: expression id}): Syms taken out of
    a launch, with the guards their use implies."""
    ctx = context()
    params = getattr(kernel, "params", None)
    names = list(getattr(kernel, "arg_names", None) or getattr(kernel.fn, "arg_names", ()))
    marks: dict[str, int] = {}
    plain_args = []
    for i, a in enumerate(args):
        if type(a) is Sym:
            param = params[i] if params is not None and i < len(params) else None
            constexpr = param is not None and getattr(param, "is_constexpr", False)
            dns = param is not None and getattr(param, "do_not_specialize", False)
            if ctx is None or constexpr or i >= len(names) or (a.v == 1 and not dns):
                a = a.pin()  # compiled into the kernel (Triton specialises on 1)
            else:
                _specialisation_guards(a, not dns)
                marks[names[i]] = ctx.expr_id(a.expr)
                a = a.v
        plain_args.append(a)
    kwargs = {k: plain(v) for k, v in kwargs.items()}  # constexprs: compiled in
    grid_ids = []
    if isinstance(grid, (tuple, list)):
        plain_grid = []
        for g in grid:
            if type(g) is Sym and ctx is not None:
                _ = g >= 1  # a launch has programs
                grid_ids.append(ctx.expr_id(g.expr))
                g = g.v
            else:
                grid_ids.append(-1)
                g = plain(g)
            plain_grid.append(g)
        grid = tuple(plain_grid)
    return grid, tuple(plain_args), kwargs, grid_ids, marks


def note_result(result):
    """Tells C++ which of a result's ints are expressions (leaves numbered depth-first)."""
    ctx = context()
    if ctx is None:
        return
    found: list[tuple[int, int]] = []
    position = 0

    def walk(x):
        nonlocal position
        if isinstance(x, (tuple, list)):
            for e in x:
                walk(e)
            return
        if type(x) is Sym:
            found.append((position, ctx.expr_id(x.expr)))
        position += 1

    walk(result)
    if found:
        ctx.c_ext._plan_sym_results(found)


def traced(fn):
    """fn, telling C++ about its result's expressions (ops declared shapes=True)."""

    @functools.wraps(fn)
    def wrapper(*args):
        result = fn(*args)
        note_result(result)
        return result

    return wrapper
