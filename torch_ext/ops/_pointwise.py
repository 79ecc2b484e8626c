"""Pointwise kernel generator (the idea of seed 004, written afresh).

A scalar `@triton.jit` function, e.g.

    @pointwise(promotion="default")
    @triton.jit
    def add(a, b, alpha):
        return a + alpha * b

becomes a `Pointwise` object that launches generated kernels:

* `op.iter(outs, ins, common_dtype, *extra)` -- the TensorIterator calling
  convention: all tensors share one shape, strides are arbitrary (0 for
  broadcast), an input may be a Python number.
* `op(*inputs, *extra, out=None)` -- a functional form with torch's
  broadcasting and type promotion.

Before launching, dimensions are coalesced (size-1 dimensions dropped,
adjacent dimensions merged where every operand allows), so contiguous
operands of any shape run the rank-1 contiguous kernel.  Other layouts get a
kernel specialised on the rank, which rebuilds the multi-index from a flat
task id.  Kernel source is written to a cache file and imported, so that
`triton.jit` can read it; the scalar function is called from the generated
kernel (Triton inlines it).

Loads are cast to the compute dtype (fp16/bf16 compute in fp32, bool in
int8), results are cast to each output's dtype on store.
"""

import hashlib
import math
import importlib.util
import os
import tempfile
import threading
import numpy as np
import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from .. import config as _config
from ..backends import spec
from ._launch import cdiv, launch, pow2_at_most
from ._symbolic import scalar_operand, sizes, strides

_DEFAULT_PROMOTION = ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT

_TL_NAMES = {
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.float32: "tl.float32",
    torch.float64: "tl.float64",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.int16: "tl.int16",
    torch.int32: "tl.int32",
    torch.int64: "tl.int64",
    torch.bool: "tl.int1",
}


def tl_name(dtype):
    try:
        return _TL_NAMES[dtype]
    except KeyError:
        raise NotImplementedError(
            f"torch_ext: dtype {dtype} is not supported by Triton kernels"
        ) from None


def compute_dtype(dtype):
    """The dtype a kernel computes in for operands promoted to `dtype`."""
    if dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    if dtype == torch.bool:
        return torch.int8
    return dtype


def cache_dir():
    path = _config.get("TORCH_EXT_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "torch_ext", "pointwise"
    )
    os.makedirs(path, exist_ok=True)
    return path


_GENERATED = {}  # module name -> module: one module (one JIT function) per source


def load_generated(source, stem):
    """Writes `source` under the cache, imports it, returns the module (the same module
    for the same source, so that its kernels compiled once, e.g. by torch_ext.warmup,
    are the ones later calls launch)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    found = _GENERATED.get(f"torch_ext_gen_{stem}_{digest}")
    if found is not None:
        return found
    path = os.path.join(cache_dir(), f"{stem}_{digest}.py")
    if not os.path.exists(path):
        # Write-then-rename: concurrent processes never see a partial file.
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    spec_ = importlib.util.spec_from_file_location(f"torch_ext_gen_{stem}_{digest}", path)
    module = importlib.util.module_from_spec(spec_)
    module._generated_from = (stem, source)  # for torch_ext.warmup: made again elsewhere
    spec_.loader.exec_module(module)
    _GENERATED[module.__name__] = module
    return module


# Generators by name, for torch_ext.warmup: a record names a generated kernel
# by its generator and key, which a later process turns back into the kernel.
_BY_NAME = {}


def warmup_key(module_globals):
    """[generator name, key] of a generated kernel's module, as JSON; else None."""
    found = module_globals.get("_warmup_key")
    if found is None:
        return None
    name, (in_kinds, cdt, num_extra, rank, contig, idx64) = found
    return [name, [list(in_kinds), str(cdt).removeprefix("torch."), num_extra, rank, contig, idx64]]


def kernel_for_warmup(generated):
    """The generated JIT kernel that `warmup_key` described (generated now if
    this process has not yet)."""
    name, (in_kinds, cdt, num_extra, rank, contig, idx64) = generated
    gen = _BY_NAME.get(name)
    if gen is None:
        raise LookupError(f"no single pointwise generator named {name!r}")
    dtype = getattr(torch, cdt)
    if not isinstance(dtype, torch.dtype):
        raise LookupError(f"{cdt!r} is not a torch dtype")
    return gen._kernel(tuple(in_kinds), dtype, num_extra, rank, contig, idx64)


# ---------------------------------------------------------------------------
# layout helpers


def coalesce(shape, strides_list):
    """Drops size-1 dims and merges contiguous neighbours for every operand.

    Returns (shape, strides_list) with rank >= 0; dims stay in the given order.
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    shape = [shape[i] for i in dims]
    strides_list = [[st[i] for i in dims] for st in strides_list]
    if not shape:
        return [], [[] for _ in strides_list]
    out_shape = [shape[-1]]
    out_strides = [[st[-1]] for st in strides_list]
    for d in range(len(shape) - 2, -1, -1):
        if all(st[d] == out_shape[0] * ost[0] for st, ost in zip(strides_list, out_strides)):
            out_shape[0] *= shape[d]
        else:
            out_shape.insert(0, shape[d])
            for st, ost in zip(strides_list, out_strides):
                ost.insert(0, st[d])
    return out_shape, out_strides


def _transposing(shape, strides_list):
    """Whether the tile kernel serves these coalesced operands: two or three dimensions,
    the last two at least 16 long (and the batch within a grid's second axis), and an
    operand contiguous along the rows where the output (the last operand) is along the
    columns."""
    if len(shape) not in (2, 3) or shape[-1] < 16 or shape[-2] < 16:
        return False
    if len(shape) == 3 and shape[0] >= 65536:
        return False
    return strides_list[-1][-1] == 1 and any(st[-2] == 1 for st in strides_list[:-1])


def broadcast_strides(t, shape):
    """Strides of tensor t viewed with the broadcast `shape` (0 where expanded)."""
    nd = len(shape)
    st = [0] * (nd - t.dim()) + list(t.stride())
    sz = [1] * (nd - t.dim()) + list(t.shape)
    return [0 if sz[i] == 1 and shape[i] != 1 else st[i] for i in range(nd)]


# ---------------------------------------------------------------------------
# code generation


def _kernel_source(num_in, num_out, num_extra, in_kinds, in_cast, cdt, rank, contig, idx64):
    """in_kinds[i]: 't' tensor or 's' scalar. in_cast[i]: cast input i to cdt.
    contig: True (flat, every operand contiguous), False (flat task ids unravelled by
    the sizes), or "tile" (rank 3, (batch, rows, columns): a program owns a BR x BK tile
    of one batch entry, so that an operand whose rows are contiguous -- a transposed
    input, an NCHW tensor copied to channels_last -- is read along its rows while the
    output is written along its columns; Triton exchanges the two layouts on chip)."""
    tile = contig == "tile"
    if tile:
        contig = False
    ins = [f"in{i}" for i in range(num_in)]
    outs = [f"out{i}" for i in range(num_out)]
    extras = [f"e{i}" for i in range(num_extra)]
    tensors = [n for n, k in zip(ins, in_kinds) if k == "t"] + outs
    params = ins + outs + extras + ["n"]
    if not contig:
        params += [f"s{d}" for d in range(rank)]
        params += [f"{t}_st{d}" for t in tensors for d in range(rank)]
    scalar_params = [n for n, k in zip(ins, in_kinds) if k == "s"] + extras
    # Triton passes Python floats as fp32; for float64 compute each float
    # scalar travels as a (hi, lo) fp32 pair (48 significant bits).
    split64 = cdt == "tl.float64"
    if split64:
        params = [p for p in params if p not in scalar_params]
        params[:0] = [f"{n}_{part}" for n in scalar_params for part in ("hi", "lo")]
    no_specialize = (
        [f"{n}_{part}" for n in scalar_params for part in ("hi", "lo")]
        if split64
        else scalar_params
    )
    lines = [
        "import triton",
        "import triton.language as tl",
        "",
        "_scalar = None  # the scalar function, set by the generator",
        "",
        "",
        f"@triton.jit(do_not_specialize={no_specialize!r})",
        f"def _kernel({', '.join(params)}, BLOCK: tl.constexpr):"
        if not tile
        else f"def _kernel({', '.join(params)}, BR: tl.constexpr, BK: tl.constexpr):",
    ]
    if tile:
        lines.append("    tiles_k = tl.cdiv(s2, BK)")
        lines.append("    pid = tl.program_id(0)")
        lines.append("    i1 = (pid // tiles_k) * BR + tl.arange(0, BR)")
        lines.append("    i2 = (pid % tiles_k) * BK + tl.arange(0, BK)")
        lines.append("    i0 = tl.program_id(1)")
        if idx64:
            for v in ("i0", "i1", "i2"):
                lines.append(f"    {v} = {v}.to(tl.int64)")
        lines.append("    mask = (i1 < s1)[:, None] & (i2 < s2)[None, :]")
    else:
        if idx64:
            lines.append("    tid = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
        else:
            lines.append("    tid = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)")
        lines.append("    mask = tid < n")

    def offset(t):
        if contig:
            return "tid"
        if tile:
            return f"i0 * {t}_st0 + i1[:, None] * {t}_st1 + i2[None, :] * {t}_st2"
        return " + ".join(f"i{d} * {t}_st{d}" for d in range(rank))

    if not contig and not tile:
        lines.append("    rem = tid")
        for d in range(rank - 1, 0, -1):
            lines.append(f"    i{d} = rem % s{d}")
            lines.append(f"    rem = rem // s{d}")
        lines.append("    i0 = rem")
    if split64:
        for name in scalar_params:
            lines.append(
                f"    {name} = tl.cast({name}_hi, tl.float64) + tl.cast({name}_lo, tl.float64)"
            )
    vals = []
    for i, (name, kind) in enumerate(zip(ins, in_kinds)):
        src = f"tl.load({name} + {offset(name)}, mask=mask)" if kind == "t" else name
        if in_cast[i]:
            src = f"tl.cast({src}, {cdt})"
        lines.append(f"    v{i} = {src}")
        vals.append(f"v{i}")
    results = [f"r{i}" for i in range(num_out)]
    lines.append(f"    {', '.join(results)} = _scalar({', '.join(vals + extras)})")
    for name, r in zip(outs, results):
        # Through float32: Triton's interpreter casts bool/int64/float64 to bf16 bitwise.
        lines.append(f"    if {name}.dtype.element_ty == tl.bfloat16:")
        lines.append(f"        {r} = tl.cast({r}, tl.float32)")
        # Floating to a narrow integer wraps through int32, as on the CPU (and as
        # torch's CUDA uint8 cast): a GPU's direct conversion saturates instead.
        lines.append(
            f"    if {r}.dtype.is_floating() and {name}.dtype.element_ty.is_int() "
            f"and {name}.dtype.element_ty != tl.int1 "
            f"and {name}.dtype.element_ty.primitive_bitwidth < 32:"
        )
        lines.append(f"        {r} = tl.cast({r}, tl.int32)")
        lines.append(
            f"    tl.store({name} + {offset(name)}, "
            f"tl.cast({r}, {name}.dtype.element_ty), mask=mask)"
        )
    return "\n".join(lines) + "\n"


class Pointwise:
    """A scalar function lifted to tensors. See the module docstring.

    promotion (functional form only):
      "default"       result dtype = torch.result_type of the inputs
      "int_to_float"  as default, integers and bool become the default float
      "bool"          compute in the promoted dtype, output bool
    cast: per input, whether it is cast to the compute dtype (False keeps
      e.g. a bool condition as loaded).  num_outputs: results of the function.
    takes: the compute dtypes PyTorch's kernels of the op accept, where fewer than
      all: "floating", "integral" (no bool) or "no_bool"; another raises
      NotImplementedError as theirs (remainder of booleans, frac of integers).
    """

    def __init__(
        self, fn, num_inputs, num_outputs=1, promotion="default", cast=None, name=None,
        takes=None,
    ):  # fmt: skip
        assert takes in (None, "floating", "integral", "no_bool"), takes
        self.takes = takes
        self.fn = fn
        self.name = name or fn.__name__
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.promotion = promotion
        self.cast = list(cast) if cast is not None else [True] * num_inputs
        self._kernels = {}
        self._lock = threading.Lock()
        self.complex = None  # the Pointwise over real and imaginary parts (complex_parts)
        _BY_NAME[self.name] = self if self.name not in _BY_NAME else None  # None: ambiguous

    # -- kernels ----------------------------------------------------------
    def _kernel(self, in_kinds, cdt, num_extra, rank, contig, idx64):
        key = (tuple(in_kinds), cdt, num_extra, rank, contig, idx64)
        kernel = self._kernels.get(key)
        if kernel is None:
            with self._lock:
                kernel = self._kernels.get(key)
                if kernel is None:
                    src = _kernel_source(
                        self.num_inputs,
                        self.num_outputs,
                        num_extra,
                        in_kinds,
                        self.cast,
                        tl_name(cdt),
                        rank,
                        contig,
                        idx64,
                    )
                    module = load_generated(src, f"{self.name}_r{rank}")
                    module._scalar = self.fn
                    module._warmup_key = (self.name, key)
                    kernel = module._kernel
                    self._kernels[key] = kernel
        return kernel

    # -- TensorIterator convention ---------------------------------------
    def iter(self, outs, ins, common_dtype, *extra):
        """outs/ins share one shape; an input may be a Python number. Sizes and strides
        are read through _symbolic: one launch plan serves every size of a shape class
        (the TensorIterator path declares every Pointwise size-generic)."""
        assert len(outs) == self.num_outputs and len(ins) == self.num_inputs, self.name
        if common_dtype.is_complex:
            return _complex_iter(self, outs, ins, common_dtype, extra)
        if self.takes is not None and not _takes(self.takes, common_dtype):
            from ._common import scalar_name  # (_common imports this module)

            raise NotImplementedError(
                f"\"{self.name}\" not implemented for '{scalar_name(common_dtype)}'"
            )
        shape = list(sizes(outs[0]))
        numel = math.prod(shape)
        if numel == 0:
            return
        tensors = [t for t in ins if isinstance(t, torch.Tensor)] + list(outs)
        if any(t.shape != outs[0].shape for t in tensors):
            raise ValueError(
                f"{self.name}: operands of the iterator convention must share "
                f"one shape, got {[tuple(t.shape) for t in tensors]}"
            )
        cshape, cstrides = coalesce(shape, [list(strides(t)) for t in tensors])
        if any(type(x) is int for x in ins):  # an integer CPU scalar: a variable too
            n = len(outs)
            ins = tuple(
                scalar_operand(n + j, x) if type(x) is int else x for j, x in enumerate(ins)
            )
        rank = len(cshape)
        contig = rank <= 1 and all(st == [1] or not st for st in cstrides)
        max_off = (
            sum((s - 1) * max(st[d] for st in cstrides) for d, s in enumerate(cshape))
            if cshape
            else 0
        )
        idx64 = numel + 1024 * 64 >= 2**31 or max_off >= 2**31
        in_kinds = ["t" if isinstance(t, torch.Tensor) else "s" for t in ins]
        cdt = compute_dtype(common_dtype)
        scalars = [x for x in ins if not isinstance(x, torch.Tensor)] + list(extra)
        if cdt == torch.float64:
            args = [part for x in scalars for part in _split_f64(x)]
            args += [t for t in ins if isinstance(t, torch.Tensor)] + list(outs) + [numel]
        else:
            args = list(ins) + list(outs) + list(extra) + [numel]
        if _transposing(cshape, cstrides):
            return self._launch_tiles(args, in_kinds, cdt, len(extra), cshape, cstrides, idx64)
        kernel = self._kernel(in_kinds, cdt, len(extra), max(rank, 1), contig, idx64)
        # (block, warps) where the driver has one for this size and element size
        tile = spec("pointwise_tile", numel, max(t.element_size() for t in tensors))
        if tile is not None:
            block, warps = pow2_at_most(numel, tile[0]), tile[1]
        else:
            block = pow2_at_most(numel, spec("pointwise_block", numel) or 1024)
            warps = 4 if block <= 1024 else 8
        if not contig:
            if rank == 0:
                cshape, cstrides = [1], [[0] for _ in tensors]
            args += cshape
            for st in cstrides:
                args += st
        launch(kernel, (cdiv(numel, block),), *args, BLOCK=block, num_warps=warps)

    def _launch_tiles(self, args, in_kinds, cdt, num_extra, cshape, cstrides, idx64):
        """The "tile" kernel over (batch, rows, columns) (see _kernel_source); `args` as
        the flat kernel takes them, before the sizes and strides."""
        if len(cshape) == 2:
            cshape, cstrides = [1, *cshape], [[0, *st] for st in cstrides]
        kernel = self._kernel(in_kinds, cdt, num_extra, 3, "tile", idx64)
        br, bk = pow2_at_most(cshape[1], 64), pow2_at_most(cshape[2], 64)
        args = args + list(cshape) + [v for st in cstrides for v in st]
        grid = (cdiv(cshape[1], br) * cdiv(cshape[2], bk), cshape[0])
        launch(kernel, grid, *args, BR=br, BK=bk, num_warps=4)

    # -- functional convention -------------------------------------------
    def result_dtypes(self, inputs):
        common = _result_type(inputs)
        if self.promotion == "int_to_float" and not (common.is_floating_point or common.is_complex):
            common = torch.get_default_dtype()
        out = torch.bool if self.promotion == "bool" else common
        return common, out

    def __call__(self, *args, out=None, out_dtype=None):
        inputs, extra = args[: self.num_inputs], args[self.num_inputs :]
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        common, out_dt = self.result_dtypes(inputs)
        if out_dtype is not None:
            out_dt = out_dtype
        shape = torch.broadcast_shapes(*[t.shape for t in tensors])
        device = tensors[0].device
        # A 0-dim tensor on another device (e.g. a CPU scalar) is a number.
        ins = []
        for t in inputs:
            if isinstance(t, torch.Tensor) and t.device != device and t.dim() == 0:
                t = t.item()
            if isinstance(t, torch.Tensor):
                t = t.expand(shape)
            ins.append(t)
        if out is None:
            outs = tuple(
                torch.empty(shape, dtype=out_dt, device=device) for _ in range(self.num_outputs)
            )
        else:
            outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        self.iter(outs, tuple(ins), common, *extra)
        return outs[0] if self.num_outputs == 1 else outs


def float_view(t):
    """A complex tensor as floats, (..., 2): real and imaginary parts (its conjugate or
    negative bit resolved first)."""
    return torch.view_as_real(t.resolve_conj().resolve_neg())


def _parts(x):
    """(real, imaginary) of an operand: strided float views of a complex tensor, a real
    tensor and 0, a number's parts."""
    if isinstance(x, torch.Tensor):
        if not x.is_complex():
            return [x, 0.0]
        r = float_view(x)
        return [r[..., 0], r[..., 1]]
    z = complex(x)
    return [z.real, z.imag]


def _complex_iter(op, outs, ins, common_dtype, extra):
    """op.iter for a complex common dtype: op.complex (complex_parts) over the real and
    imaginary parts of every operand and extra number, float32 for complex64 and float64
    for complex128; outputs are written through float views of their parts (TensorIterator
    has refused a real output of a complex result already)."""
    if op.complex is None:
        from ._common import scalar_name  # (_common imports this module)

        raise NotImplementedError(
            f"\"{op.name}\" not implemented for '{scalar_name(common_dtype)}' on privateuseone "
            "(complex kernels: add, sub, mul, div, neg, exp, log, sqrt, abs, sgn, reciprocal, sum, "
            "mean, cat)"
        )
    real = torch.float64 if common_dtype == torch.complex128 else torch.float32
    parts_in = [p for x in ins for p in _parts(x)]
    parts_out = [p for t in outs for p in _parts(t)]
    parts_extra = [p for e in extra for p in _parts(e)]
    op.complex.iter(tuple(parts_out), tuple(parts_in), real, *parts_extra)


def complex_parts(op):
    """Decorator: `@complex_parts(op)` over a `@triton.jit` function of the real and
    imaginary parts of op's inputs and extra numbers (each input a, then each extra, as
    a_re, a_im), returning the parts of each output: op then takes complex operands
    (whose manifest entries list `complex` in `dtypes:`)."""

    def wrap(fn):
        op.complex = Pointwise(fn, 2 * op.num_inputs, 2 * op.num_outputs, name=f"{op.name}_complex")
        return op.complex

    return wrap


def is_pointwise_iter(fn) -> bool:
    """fn is a Pointwise's TensorIterator form (its launch plans are size-generic)."""
    return isinstance(getattr(fn, "__self__", None), Pointwise) and fn.__func__ is Pointwise.iter


def _split_f64(x):
    x = float(x)
    hi = float(np.float32(x)) if math.isfinite(x) and abs(x) < 3.0e38 else x
    lo = float(np.float32(x - hi)) if math.isfinite(hi) else 0.0
    return hi, lo


def _result_type(inputs):
    """torch's promotion of tensors and numbers (dim / zero-dim / number)."""
    _, result = elementwise_dtypes(*inputs, type_promotion_kind=_DEFAULT_PROMOTION)
    return result


def _takes(kind, dtype):
    if kind == "floating":
        return dtype.is_floating_point
    if kind == "integral":
        return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool
    return dtype != torch.bool  # no_bool


def pointwise(num_inputs=None, num_outputs=1, promotion="default", cast=None, takes=None):
    """Decorator: `@pointwise(...)` over a `@triton.jit` scalar function.

    num_inputs defaults to all of the function's parameters (the rest are
    extra scalar arguments, e.g. alpha).
    """

    def wrap(fn):
        n = num_inputs
        if n is None:
            n = len(
                getattr(fn, "arg_names", None)
                or fn.fn.__code__.co_varnames[: fn.fn.__code__.co_argcount]
            )
        return Pointwise(fn, n, num_outputs, promotion, cast, takes=takes)

    return wrap
