"""Helpers every op family shares (one place, public to the families): contiguity and
write-back, accumulator dtypes, block sizes, index arithmetic for strided kernels,
sized outputs. The kernel registry and its declaration are in _declare.py."""

from __future__ import annotations

import triton
import triton.language as tl
import math
import struct
import torch

from ..backends import spec
from ._launch import cdiv, next_pow2, pow2_at_most
from ._symbolic import empty, sizes
from .copy import copy_kernel, fill_

MAX_SPATIAL = 3


def alert_not_deterministic(caller: str) -> None:
    """at::globalContext().alertNotDeterministic for our Python kernels: under
    torch.use_deterministic_algorithms(True) an op whose kernel adds floats with
    atomics (the order, hence the rounding, varies between runs on a GPU) raises the
    RuntimeError CUDA raises for the same op (a warning with warn_only=True)."""
    if not torch.are_deterministic_algorithms_enabled():
        return
    msg = (
        f"{caller} does not have a deterministic implementation, but you set "
        "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just "
        "for this operation, or you can use the 'warn_only=True' option, if that's "
        "acceptable for your application."
    )
    if torch.is_deterministic_algorithms_warn_only_enabled():
        import warnings

        warnings.warn(msg, stacklevel=2)
        return
    raise RuntimeError(msg)


# dtype names as PyTorch's messages print them: ScalarType ("Float") and TypeMeta ("float")
_SCALAR_NAMES = {
    torch.float32: ("Float", "float"),
    torch.float64: ("Double", "double"),
    torch.float16: ("Half", "c10::Half"),
    torch.bfloat16: ("BFloat16", "c10::BFloat16"),
    torch.int64: ("Long", "long int"),
    torch.int32: ("Int", "int"),
    torch.int16: ("Short", "short int"),
    torch.int8: ("Char", "signed char"),
    torch.uint8: ("Byte", "unsigned char"),
    torch.bool: ("Bool", "bool"),
    torch.complex64: ("ComplexFloat", "c10::complex<float>"),
    torch.complex128: ("ComplexDouble", "c10::complex<double>"),
}


def tf32_allowed(op: str) -> bool:
    """Whether float32 products of `op` ("matmul" or "conv") may multiply in TF32, as
    CUDA's cuBLAS and cuDNN calls decide: PyTorch's resolved fp32_precision of ("cuda",
    op), i.e. torch.backends.cuda.matmul / torch.backends.cudnn.conv's setting, else
    their backend's, else torch.backends.fp32_precision. The legacy
    torch.set_float32_matmul_precision and cudnn.allow_tf32 set the same state; their
    getters raise once a user mixes the two APIs, this does not."""
    if _fp32_precision is None:  # a torch before the fp32_precision API
        if op == "matmul":
            return torch.get_float32_matmul_precision() != "highest"
        return torch.backends.cudnn.allow_tf32
    return _fp32_precision("cuda", op) == "tf32"


_fp32_precision = getattr(torch._C, "_get_fp32_precision_getter", None)


def scalar_name(dtype: torch.dtype, meta: bool = False) -> str:
    """How PyTorch's C++ messages name `dtype`: its ScalarType ("Float", "Half"), or with
    `meta` its TypeMeta ("float", "c10::Half")."""
    names = _SCALAR_NAMES.get(dtype)
    return names[meta] if names else str(dtype).replace("torch.", "")


_INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a "
    "single memory location. Please clone() the tensor before performing the operation."
)
_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor "
    "refer to a single memory location. Please clone() the tensor before performing the "
    "operation."
)


def _overlap(a: torch.Tensor, b: torch.Tensor) -> str:
    """at::get_overlap_status: "full" (the same elements), "partial", "no" or "too hard"
    (a tensor with gaps or repeats, whose bytes' range says nothing)."""
    if a is b:
        return "full"
    # storages first: apart, nothing of the sizes is read (a size-generic launch plan
    # records none, ops/_symbolic.py)
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return "no"
    if a.numel() == 0 or b.numel() == 0:
        return "no"
    dense = torch._debug_has_internal_overlap  # 0: non-overlapping and dense
    if dense(a) != 0 or dense(b) != 0:
        return "too hard"
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    if (a0, a1) == (b0, b1):
        return "full" if a.stride() == b.stride() else "partial"
    return "partial" if a0 < b1 and b0 < a1 else "no"


def check_out_overlap(out: torch.Tensor, *inputs, partial=()) -> None:
    """What PyTorch's kernels check of an out= tensor before writing it: no element
    written twice (at::assert_no_internal_overlap), no element of `inputs` written
    (assert_no_overlap), and the `partial` inputs either the out tensor itself or apart
    from it (assert_no_partial_overlap); RuntimeErrors with PyTorch's messages."""
    if torch._debug_has_internal_overlap(out) == 1:
        raise RuntimeError(_INTERNAL_OVERLAP)
    for t in inputs:
        if isinstance(t, torch.Tensor) and _overlap(out, t) in ("full", "partial"):
            raise RuntimeError(_OVERLAP)
    for t in partial:
        if isinstance(t, torch.Tensor) and _overlap(out, t) == "partial":
            raise RuntimeError(_OVERLAP)


def sized_like(out: torch.Tensor, res: torch.Tensor) -> torch.Tensor:
    out.resize_(res.shape)
    out.copy_(res)
    return out


@triton.jit
def split3(v, S1, S2):
    return v // (S1 * S2), (v // S2) % S1, v % S2


def pow2_dividing(*values, cap=8):
    """The largest power of two, at most `cap`, that divides every value (`cap` when all
    are 0): how aligned strides are that Triton, knowing divisibility by 16 only, cannot
    see (as_multiple)."""
    g = math.gcd(*values)
    return min(cap, g & -g) if g else cap


def pixel_alignment(pixels, strides):
    """What a kernel reading (N, C, pixel) tensors along unit-stride pixels may tell
    Triton (as_multiple) the pixel count and every tensor's image and channel strides
    are multiples of: pow2_dividing of them all; 1 when some tensor's pixels are strided.
    `strides`: the (sN, sC, sP) of each tensor (ncs_strides). Told 4, a 14x14 map's
    loads are 8 bytes with cp.async (pipelined); untold, two bytes without it."""
    if any(sP != 1 for _, _, sP in strides):
        return 1
    return pow2_dividing(pixels, *(v for sN, sC, _ in strides for v in (sN, sC)))


@triton.jit
def as_multiple(v, A: tl.constexpr):
    """v, told to Triton as a multiple of A (the caller knows it is one): a
    value-preserving round trip, which Triton's divisibility analysis reads and
    tl.multiple_of on a scalar argument does not reach. A 14x14 map's 196-element rows
    load 8 bytes at a time told 4, two bytes at a time untold (compiled for sm_90)."""
    if A > 1:
        v = v // A * A
    return v


def fastdiv(d):
    """(m, sh) for `fdiv` by d (1 <= d < 2**31): m = floor(2**(31 + l) / d) + 1 with
    l = ceil(log2 d), sh = 31 + l (Granlund and Montgomery: floor(v / d) equals
    (v * m) >> sh for every 0 <= v < 2**31)."""
    sh = 31 + (d - 1).bit_length()
    return (1 << sh) // d + 1, sh


@triton.jit
def fdiv(v, m, sh):
    """v // d for 0 <= v < 2**31 with (m, sh) = fastdiv(d): m < 2**32, so (v * m) >> sh is
    the high word of the 32-bit product (2v) * m shifted by sh - 31 (three instructions;
    a division by a run-time value takes about twenty, a 64-bit product six). An implicit
    GEMM's loop divides each pixel index by the map's sizes. int32 in, int32 out."""
    hi = tl.umulhi(v.to(tl.uint32) << 1, m.to(tl.uint32))
    return (hi >> (sh - 31).to(tl.uint32)).to(tl.int32)


@triton.jit
def split_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, FAST: tl.constexpr, D3: tl.constexpr):
    """(image, o0, o1, o2) of flat row indices r over (N, O0, O1, O2) maps (OP = O0 * O1 *
    O2): with FAST by multiply and shift ((m, sh) = fastdiv(OP), fastdiv(O1),
    fastdiv(O2); rows below 2**31), else by division. Without D3 the maps are 1-d or
    2-d (O0 == 1): o0 is 0 and its division skipped. The convolutions' weight-gradient
    loops split each reduction row so, per row a step."""
    if FAST:
        n = fdiv(r, mP, shP)
        v = r - n * OP
        t = fdiv(v, m2, sh2)
        o2 = v - t * O2
        if D3:
            o0 = fdiv(t, m1, sh1)
            o1 = t - o0 * O1
        else:
            o0 = 0
            o1 = t
    else:
        n = r // OP
        o0, o1, o2 = split3(r % OP, O1, O2)
    return n, o0, o1, o2


@triton.jit
def arrive(arrivals, slot, expected):
    """True in the last of `expected` programs to arrive at counter `slot` of
    `arrivals` (_launch.arrival_counters, zero between launches); that one re-arms the
    counter. What the programs stored before arriving is visible to it (the atomic's
    release/acquire)."""
    tl.debug_barrier()  # every warp's stores are issued before the arrival
    last = tl.atomic_add(arrivals + slot, 1) == expected - 1
    if last:
        tl.debug_barrier()
        tl.atomic_xchg(arrivals + slot, 0)
    return last


@triton.jit
def inside(i, size):
    """0 <= i < size, by one unsigned comparison (i int32, size below 2**31)."""
    return tl.cast(i, tl.uint32) < tl.cast(size, tl.uint32)


@triton.jit
def tap_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, s0, s1, s2, p0, p1, p2, t0, t1, t2,
             FAST: tl.constexpr, D3: tl.constexpr):  # fmt: skip
    """Rows r of a convolution's weight-gradient reduction (flat (image, output pixel)
    indices, split_rows) and the input pixel each reads at the tap offset (t0, t1, t2)
    (kernel position times dilation): (n, o0, o1, o2, i0, i1, i2), i possibly outside
    the map (in_map)."""
    n, o0, o1, o2 = split_rows(r, OP, O1, O2, mP, shP, m1, sh1, m2, sh2, FAST, D3)
    return n, o0, o1, o2, o0 * s0 - p0 + t0, o1 * s1 - p1 + t1, o2 * s2 - p2 + t2


@triton.jit
def in_map(i0, i1, i2, I0, I1, I2, D3: tl.constexpr):
    """Whether input pixels (i0, i1, i2) lie in the (I0, I1, I2) map; dimension 0 is
    left unchecked for 1-d and 2-d maps (not D3: i0 == 0, I0 == 1)."""
    ok = inside(i1, I1) & inside(i2, I2)
    if D3:
        ok &= inside(i0, I0)
    return ok


@triton.jit
def store_masked(ptr, offs, v, mask):
    # Through float32: Triton's interpreter casts to bf16 bitwise otherwise.
    if ptr.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)
    tl.store(ptr + offs, v.to(ptr.dtype.element_ty), mask=mask)


def pad3(v, fill):
    v = list(v)
    return [fill] * (MAX_SPATIAL - len(v)) + v


def as_planes(x):
    x = contiguous(x)
    return x, x.shape[-2], x.shape[-1]


def dense_out(out):
    """`out` if contiguous, else a contiguous temporary for _write_back."""
    return (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )


def write_back(out, target):
    if target is not out:
        copy_kernel((out,), (target,))


@triton.jit
def split4(v, S1, S2, S3):
    rest, i2, i3 = split3(v, S2, S3)
    return rest // S1, rest % S1, i2, i3


def spatial3(shape, nsp):
    """(D, H, W) of an N-C-spatial shape with nsp spatial dims (1s in front)."""
    return [1] * (3 - nsp) + [int(v) for v in shape[len(shape) - nsp :]]


MAX_RANK = 6


def pad_to_rank(values, fill):
    values = list(values)
    if len(values) > MAX_RANK:
        raise NotImplementedError(f"torch_ext: tensors of rank > {MAX_RANK} in indexing kernels")
    return [fill] * (MAX_RANK - len(values)) + values


def block_for(n):
    # The cap is a power of two: min(cap, next_pow2(n)), deciding on n >= cap alone (a
    # size-generic plan then holds for every n past the cap: ops/_symbolic.py).
    return pow2_at_most(max(n, 1), spec("pointwise_block", n) or 1024)


@triton.jit
def unravel6(o, s1, s2, s3, s4, s5):
    i5 = o % s5
    o = o // s5
    i4 = o % s4
    o = o // s4
    i3 = o % s3
    o = o // s3
    i2 = o % s2
    o = o // s2
    i1 = o % s1
    i0 = o // s1
    return i0, i1, i2, i3, i4, i5


@triton.jit
def dot6(i0, i1, i2, i3, i4, i5, t0, t1, t2, t3, t4, t5):
    return i0 * t0 + i1 * t1 + i2 * t2 + i3 * t3 + i4 * t4 + i5 * t5


TL_DTYPES = {
    torch.float16: tl.float16,
    torch.float32: tl.float32,
    torch.float64: tl.float64,
    torch.int64: tl.int64,
    torch.int32: tl.int32,
}


def acc_dtype(dtype):
    """Reductions accumulate floats as float_acc says and integers (and bools) in int64."""
    return float_acc(dtype) if dtype.is_floating_point else torch.int64


def as_arb(x, dims):
    """(x', A, R, B) with x' contiguous and the reduced dims one block."""
    ndim = x.dim()
    if ndim == 0:
        return x.reshape(1), 1, 1, 1
    if x.is_contiguous() and dims == list(range(dims[0], dims[-1] + 1)):
        shape = sizes(x)  # expressions while a size-generic plan records (_symbolic)
        A = math.prod(shape[: dims[0]])
        R = math.prod(shape[dims[0] : dims[-1] + 1])
        B = math.prod(shape[dims[-1] + 1 :])
        return x, A, R, B
    keep = [d for d in range(ndim) if d not in dims]
    xp = x.permute(keep + dims)
    dense = torch.empty(xp.shape, dtype=x.dtype, device=x.device)
    copy_kernel((dense,), (xp,))
    return dense, math.prod(xp.shape[: len(keep)]), math.prod(xp.shape[len(keep) :]), 1


def reduce_blocks(O, R, B):
    # Caps are powers of two: pow2_at_most decides on O >= cap first (a size-generic
    # plan then holds for every O past the cap: _symbolic).
    budget = spec("reduction_block", R) or 4096
    if B > 1:  # rows of B apart: 64 outputs wide, wider where R is short (a sum of a
        # few float32 slices (S, N) over S: 64-wide tiles of 4 rows, 9216 programs,
        # ran at a fifth of the copy bandwidth)
        bo = pow2_at_most(O, max(64, budget // next_pow2(max(R, 1))))
    else:
        bo = pow2_at_most(O, max(1, budget // next_pow2(max(R, 1))))
    br = max(1, pow2_at_most(max(R, 1), max(1, budget // bo)))
    return bo, br


def contiguous(x):
    if x.is_contiguous():
        return x
    y = empty(sizes(x), x.dtype, x.device)  # sizes stay expressions in a recording
    copy_kernel((y,), (x,))
    return y


def wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def write_result(out, value):
    """Copies `value` into the out= tensor `out`, resized to value's shape."""
    if list(out.shape) != list(value.shape):
        out.resize_(value.shape)
    copy_kernel((out,), (value,))


# -- accumulators: float64 for float64 tensors, float32 for every other float --------


def float_acc(dtype):
    """The one accumulator rule: float64 stays float64, every other float (fp16, bf16,
    fp32) accumulates in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def f64_words(x) -> tuple[int, int]:
    """A float as the two signed 32-bit halves of its IEEE-754 double.

    Triton passes a Python float to a kernel as fp32 (the interpreter too), which
    loses float64's last 29 bits (an arange's start, a histogram's edge). The two
    words travel exactly; the kernel rebuilds the double with `f64_from_words`.
    Declare the word parameters `do_not_specialize`."""
    bits = struct.unpack("<q", struct.pack("<d", float(x)))[0]
    lo = bits & 0xFFFFFFFF
    return bits >> 32, lo - (1 << 32) if lo >= 1 << 31 else lo


@triton.jit
def f64_from_words(hi, lo):
    """The double whose halves `f64_words` made."""
    bits = (hi.to(tl.int64) << 32) | (lo.to(tl.int64) & 0xFFFFFFFF)
    return bits.to(tl.float64, bitcast=True)


def tl_float_acc(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def grid_for(total):
    block = block_for(total)
    return (cdiv(total, block),), block


def zeroed_accumulator(like):
    """A zeroed float32 (float64) buffer of like's shape, for atomics."""
    acc = torch.empty(like.shape, dtype=float_acc(like.dtype), device=like.device)
    fill_(acc, 0)
    return acc


def suggest_memory_format(x):
    """channels_last(_3d) for a batched input laid out so (and not also contiguous), as
    PyTorch's suggest_memory_format, else contiguous."""
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
    if fmt is not None and not x.is_contiguous() and x.is_contiguous(memory_format=fmt):
        return fmt
    return torch.contiguous_format


def stat_dtype(dtype):
    """The dtype of normalization statistics (mean, rstd) PyTorch saves: float32 for half
    types, the input's dtype otherwise."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def ncs_strides(t):
    """(sN, sC, sS) of t (N, C, *spatial) when its spatial dims merge into one strided
    dim (NCHW, channels_last and their slices along N or C), else None."""
    dims = [(n, s) for n, s in zip(t.shape[2:], t.stride()[2:]) if n != 1]
    for (_, sa), (nb, sb) in zip(dims, dims[1:]):
        if sa != sb * nb:
            return None
    sS = dims[-1][1] if dims else 1
    return t.stride(0), t.stride(1), sS
