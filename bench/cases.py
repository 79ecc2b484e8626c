"""The benchmark suite: one entry per op and shape.

Every case builds its inputs on the CPU from a fixed seed (so each
implementation sees the same values), then moves them to the device under
test. `bytes` counts each input read once and each output written once (the
floor a memory-bound kernel must move); `flops` is set for matrix ops.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch
import torch.nn.functional as F

M = 1 << 20


@dataclass
class Case:
    op: str
    shape: str  # human-readable
    dtype: torch.dtype
    make: Callable[[torch.dtype, float], tuple]  # (dtype, scale) -> CPU inputs
    fn: Callable  # fn(*device_inputs) -> output tensor
    out_bytes: Callable = None  # output -> bytes written (default: its size)
    flops: Optional[Callable] = None  # inputs -> floating-point operations
    matrix: bool = False
    tags: list = field(default_factory=list)


def _n(scale, n):
    return max(1, int(n * scale))


def _randn(*shape, dtype):
    return torch.randn(*shape, dtype=torch.float32).to(dtype)


def _nbytes(t):
    if isinstance(t, torch.Tensor):
        return t.numel() * t.element_size()
    if isinstance(t, (tuple, list)):
        return sum(_nbytes(x) for x in t)
    return 0


def input_bytes(inputs):
    return sum(_nbytes(x) for x in inputs)


def output_bytes(out):
    return _nbytes(out)


def _elementwise(op, fn, nargs, dtype, n=64 * M):
    def make(dt, scale):
        size = _n(scale, n)
        return tuple(_randn(size, dtype=dt) for _ in range(nargs))

    return Case(op, f"{n // M}M", dtype, make, fn)


def _rows(op, fn, dtype, rows=8192, cols=8192, extra=None):
    def make(dt, scale):
        r = _n(scale, rows)
        x = _randn(r, cols, dtype=dt)
        return (x,) + (extra(cols, dt) if extra else ())

    return Case(op, f"{rows}x{cols}", dtype, make, fn)


def _mm_case(op, dtype, m, n, k, batch=None, bias=False):
    def make(dt, scale):
        mm_, nn_, kk_ = (_n(scale, m), _n(scale, n), _n(scale, k))
        lead = (batch,) if batch else ()
        a = _randn(*lead, mm_, kk_, dtype=dt)
        b = _randn(*lead, kk_, nn_, dtype=dt)
        return ((_randn(nn_, dtype=dt),) if bias else ()) + (a, b)

    def flops(inputs):
        a, b = inputs[-2], inputs[-1]
        bt = a.shape[0] if a.dim() == 3 else 1
        return 2.0 * bt * a.shape[-2] * a.shape[-1] * b.shape[-1]

    fn = {"mm": torch.mm, "bmm": torch.bmm, "addmm": torch.addmm}[op]
    shape = (f"{batch}x" if batch else "") + f"{m}x{n}x{k}"
    return Case(op, shape, dtype, make, fn, flops=flops, matrix=True)


def _cross_entropy(dtype, rows=4096, vocab=32768):
    def make(dt, scale):
        r = _n(scale, rows)
        g = torch.Generator().manual_seed(1)
        return (_randn(r, vocab, dtype=dt), torch.randint(0, vocab, (r,), generator=g))

    return Case("cross_entropy", f"{rows}x{vocab}", dtype, make, F.cross_entropy)


def _embedding(dtype, vocab=65536, dim=4096, tokens=16384):
    def make(dt, scale):
        g = torch.Generator().manual_seed(2)
        v = _n(scale, vocab)
        return (torch.randint(0, v, (_n(scale, tokens),), generator=g), _randn(v, dim, dtype=dt))

    # Bytes: the gathered rows are read once, the output written once.
    return Case(
        "embedding", f"{tokens}x{dim} of {vocab}", dtype, make, F.embedding, tags=["gather"]
    )


def _index_select(dtype, rows=32768, dim=2048, count=16384):
    def make(dt, scale):
        g = torch.Generator().manual_seed(3)
        r = _n(scale, rows)
        return (_randn(r, dim, dtype=dt), torch.randint(0, r, (_n(scale, count),), generator=g))

    return Case(
        "index_select",
        f"{count}x{dim} of {rows}",
        dtype,
        make,
        lambda x, idx: torch.index_select(x, 0, idx),
        tags=["gather"],
    )


def _cat(dtype, rows=8192, cols=4096):
    def make(dt, scale):
        r = _n(scale, rows)
        return (_randn(r, cols, dtype=dt), _randn(r, cols, dtype=dt))

    return Case("cat", f"2x{rows}x{cols}", dtype, make, lambda a, b: torch.cat([a, b], 0))


def _where(dtype, n=64 * M):
    def make(dt, scale):
        size = _n(scale, n)
        return (torch.rand(size) > 0.5, _randn(size, dtype=dt), _randn(size, dtype=dt))

    return Case("where", f"{n // M}M", dtype, make, torch.where)


def _norm_weights(cols, dt, bias=True):
    w = _randn(cols, dtype=dt)
    return (w, _randn(cols, dtype=dt)) if bias else (w,)


def large_cases():
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    return [
        _elementwise("add", torch.add, 2, f32),
        _elementwise("add", torch.add, 2, bf16),
        _elementwise("mul", torch.mul, 2, f32),
        _elementwise("exp", torch.exp, 1, f32),
        _elementwise("gelu", F.gelu, 1, bf16),
        _elementwise("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), 1, bf16),
        _elementwise("silu", F.silu, 1, bf16),
        _rows("softmax", lambda x: torch.softmax(x, -1), f16),
        _rows("softmax", lambda x: torch.softmax(x, -1), bf16),
        _rows("log_softmax", lambda x: torch.log_softmax(x, -1), bf16),
        _rows(
            "layer_norm",
            lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b),
            f16,
            extra=_norm_weights,
        ),
        _rows(
            "rms_norm",
            lambda x, w: F.rms_norm(x, (x.shape[-1],), w),
            f16,
            extra=lambda c, dt: _norm_weights(c, dt, bias=False),
        ),
        _elementwise("sum", torch.sum, 1, f32),
        _rows("mean", lambda x: x.mean(-1), f16),
        _rows("amax", lambda x: x.amax(-1), f16),
        _rows("amin", lambda x: x.amin(-1), bf16),
        _rows("argmax", lambda x: x.argmax(-1), f16),
        _rows("cumsum", lambda x: x.cumsum(-1), f32),
        _mm_case("mm", bf16, 4096, 4096, 4096),
        _mm_case("mm", f16, 4096, 4096, 4096),
        _mm_case("bmm", bf16, 2048, 2048, 2048, batch=16),
        _mm_case("bmm", f16, 2048, 2048, 2048, batch=16),
        _mm_case("addmm", f16, 4096, 4096, 4096, bias=True),
        _mm_case("addmm", bf16, 4096, 4096, 4096, bias=True),
        _cross_entropy(f32),
        _cross_entropy(bf16),
        _embedding(f16),
        _index_select(f32),
        _cat(f32),
        _where(f32),
        Case(
            "lerp",
            f"{64}M",
            f32,
            lambda dt, s: (_randn(_n(s, 64 * M), dtype=dt), _randn(_n(s, 64 * M), dtype=dt)),
            lambda a, b: torch.lerp(a, b, 0.3),
        ),
    ]


def norm_cases():
    """Batch norm at ResNet-50's shapes (bench/cases_norm.py)."""
    from bench.cases_norm import batch_norm_cases

    return batch_norm_cases(Case)


def tiny_inputs(case):
    """The case's inputs at (about) one element: for per-call host overhead."""
    return case.make(case.dtype, 1e-9)
