"""Random numbers on the device's Philox generator.

Seed and offset come from `torch_ext._C._generator_philox(generator,
device_index, increment)` -> (seed, offset), which reserves `increment`
values of the stream; without the extension a process-local counter seeded
by torch.initial_seed() stands in (standalone tests).

Stub kernels (1), the iterator having one output:
  uniform(outs, ins, dt, from, to, gen)         uniform_stub
  random_from_to(outs, ins, dt, range, base, gen)  random_from_to_stub
  random(outs, ins, dt, gen)                    random_stub
  exponential(outs, ins, dt, lambd, gen)        exponential_stub
  cauchy(outs, ins, dt, median, sigma, gen)     cauchy_stub
  log_normal(outs, ins, dt, mean, std, gen)     log_normal_stub
  geometric(outs, ins, dt, p, gen)              geometric_stub
Tensor stubs (3-like, called with the stub's arguments):
  normal(self, mean, std, gen)                  normal_stub
  bernoulli_scalar(self, p, gen)                bernoulli_scalar_stub
  bernoulli_tensor(self, p, gen)                bernoulli_tensor_stub
Plain ops (3): native_dropout(input, p, train) -> (out, mask),
  native_dropout_backward(grad_output, mask, scale).
"""

import sys
import torch
import triton
import triton.language as tl

from . import _math
from ._launch import cdiv, launch
from .copy import copy_kernel
from ._common import block_for
from ._declare import kernel

(
    UNIFORM,
    NORMAL,
    BERNOULLI,
    BERNOULLI_T,
    RANDOM_RANGE,
    EXPONENTIAL,
    CAUCHY,
    LOG_NORMAL,
    GEOMETRIC,
) = [tl.constexpr(i) for i in range(9)]

_fallback_offset = {}


def philox_draw(generator, device, increment):
    """(seed, offset, marks): a Philox draw, and the `philox=` marks for
    `launch` of the parameters named `seed` and `offset` (None when no launch
    plan records this call)."""
    c_ext = sys.modules.get("torch_ext._C")
    ordinal = (
        c_ext._plan_philox_draws()
        if c_ext is not None and hasattr(c_ext, "_plan_philox_draws")
        else -1
    )
    seed, offset = philox(generator, device, increment)
    marks = {"seed": (0, ordinal), "offset": (1, ordinal)} if ordinal >= 0 else None
    return seed, offset, marks


def philox(generator, device, increment):
    """(seed, offset) for `increment` values of the device generator."""
    c_ext = sys.modules.get("torch_ext._C")
    index = device.index if isinstance(device, torch.device) and device.index is not None else 0
    if c_ext is not None and hasattr(c_ext, "_generator_philox"):
        return c_ext._generator_philox(generator, index, increment)
    seed = (
        generator.initial_seed() if isinstance(generator, torch.Generator) else torch.initial_seed()
    )
    key = (seed, index)
    offset = _fallback_offset.get(key, 0)
    _fallback_offset[key] = offset + increment
    return seed, offset


# seed and offset change every call: never specialised on their values (a
# launch plan replays the compiled kernel with new ones).
@triton.jit(do_not_specialize=["seed", "offset"])
def _random_kernel(out, p, n, seed, offset, a, b, KIND: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    # Each element draws from its own Philox counter: offset + 4 * index.
    c = offset + o * 4
    if KIND == NORMAL:
        v = a + b * tl.randn(seed, c)
    elif KIND == BERNOULLI:
        v = tl.rand(seed, c) < a
    elif KIND == BERNOULLI_T:
        v = tl.rand(seed, c) < tl.load(p + o, mask=mask, other=0).to(tl.float32)
    elif KIND == RANDOM_RANGE:
        r0, r1, r2, r3 = tl.randint4x(seed, c)
        wide = (r0.to(tl.uint64) << 32) | r1.to(tl.uint64)
        v = (wide % b.to(tl.uint64)).to(tl.int64) + a
    elif KIND == EXPONENTIAL:
        u = tl.rand(seed, c)
        v = -tl.log(1.0 - u) / a
    elif KIND == CAUCHY:  # median a, scale b: a + b * tan(pi * (u - 1/2))
        t = 3.141592653589793 * (tl.rand(seed, c) - 0.5)
        v = a + b * (tl.sin(t) / tl.cos(t))
    elif KIND == LOG_NORMAL:
        v = tl.exp(a + b * tl.randn(seed, c))
    elif KIND == GEOMETRIC:  # trials until the first success, >= 1: ceil(log(u) / log(1 - p))
        u = 1.0 - tl.rand(seed, c)  # in (0, 1]
        v = tl.ceil(tl.log(u) / _math.log1p(-a))
        v = tl.maximum(v, 1.0)
    else:
        v = a + (b - a) * tl.rand(seed, c)
    if out.dtype.element_ty == tl.bfloat16:
        v = v.to(tl.float32)  # Triton's interpreter casts bool/int64 to bf16 bitwise
    tl.store(out + o, v.to(out.dtype.element_ty), mask=mask)


def _fill_random(out, kind, a=0.0, b=1.0, p=None, generator=None):
    n = out.numel()
    if n == 0:
        return out
    seed, offset, marks = philox_draw(generator, out.device, 4 * n)
    target = (
        out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    )
    block = block_for(n)
    launch(
        _random_kernel,
        (cdiv(n, block),),
        target,
        p if p is not None else target,
        n,
        seed,
        offset,
        a,
        b,
        KIND=kind,
        BLOCK=block,
        philox=marks,
    )
    if target is not out:
        copy_kernel((out,), (target,))
    return out


@kernel()
def uniform(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    from_: float,
    to: float,
    generator: torch.Generator | None = None,
) -> None:
    _fill_random(outs[0], UNIFORM, float(from_), float(to), generator=generator)


@kernel()
def normal(
    self: torch.Tensor, mean: float, std: float, generator: torch.Generator | None = None
) -> None:
    _fill_random(self, NORMAL, float(mean), float(std), generator=generator)


@kernel()
def bernoulli_scalar(
    self: torch.Tensor, p: float, generator: torch.Generator | None = None
) -> None:
    _fill_random(self, BERNOULLI, float(p), generator=generator)


@kernel()
def bernoulli_tensor(
    self: torch.Tensor, p: torch.Tensor, generator: torch.Generator | None = None
) -> None:
    p = p.expand(self.shape)
    if not p.is_contiguous():
        pc = torch.empty(self.shape, dtype=p.dtype, device=p.device)
        copy_kernel((pc,), (p,))
        p = pc
    _fill_random(self, BERNOULLI_T, p=p, generator=generator)


@kernel()
def random_from_to(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    range_: int,
    base: int,
    generator: torch.Generator | None = None,
) -> None:
    _fill_random(outs[0], RANDOM_RANGE, int(base), int(range_), generator=generator)


@kernel()
def random(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    generator: torch.Generator | None = None,
) -> None:
    dtype = outs[0].dtype
    if dtype.is_floating_point:
        hi = 2 ** {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24}.get(dtype, 53) + 1
    elif dtype == torch.bool:
        hi = 2
    else:
        hi = torch.iinfo(dtype).max + 1
    _fill_random(outs[0], RANDOM_RANGE, 0, hi, generator=generator)


@kernel()
def exponential(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    lambd: float,
    generator: torch.Generator | None = None,
) -> None:
    _fill_random(outs[0], EXPONENTIAL, float(lambd), generator=generator)


@kernel()
def cauchy(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    median: float,
    sigma: float,
    generator: torch.Generator | None = None,
) -> None:
    _fill_random(outs[0], CAUCHY, float(median), float(sigma), generator=generator)


@kernel()
def log_normal(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    mean: float,
    std: float,
    generator: torch.Generator | None = None,
) -> None:
    _fill_random(outs[0], LOG_NORMAL, float(mean), float(std), generator=generator)


@kernel()
def geometric(
    outs: tuple[torch.Tensor, ...],
    ins: tuple[torch.Tensor, ...],
    common_dtype: torch.dtype,
    p: float,
    generator: torch.Generator | None = None,
) -> None:
    _fill_random(outs[0], GEOMETRIC, float(p), generator=generator)


@triton.jit(do_not_specialize=["seed", "offset"])
def _dropout_kernel(x, out, keep, n, seed, offset, p, scale, BLOCK: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n
    k = tl.rand(seed, offset + o * 4) >= p
    v = tl.load(x + o, mask=mask, other=0).to(tl.float32)
    tl.store(out + o, tl.where(k, v * scale, 0.0).to(out.dtype.element_ty), mask=mask)
    tl.store(keep + o, k, mask=mask)


@kernel()
def native_dropout(
    input: torch.Tensor, p: float, train: bool | None
) -> tuple[torch.Tensor, torch.Tensor]:
    from ._common import contiguous

    x = contiguous(input)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    keep = torch.empty(x.shape, dtype=torch.bool, device=x.device)
    if train is False or p == 0:
        copy_kernel((out,), (x,))
        from .copy import fill_kernel

        fill_kernel((keep,), (), torch.bool, True)
        return out, keep
    n = x.numel()
    if n:
        seed, offset, marks = philox_draw(None, x.device, 4 * n)
        scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
        block = block_for(n)
        launch(
            _dropout_kernel,
            (cdiv(n, block),),
            x,
            out,
            keep,
            n,
            seed,
            offset,
            float(p),
            scale,
            BLOCK=block,
            philox=marks,
        )
    return out, keep


@kernel()
def native_dropout_backward(
    grad_output: torch.Tensor, mask: torch.Tensor, scale: float
) -> torch.Tensor:
    from .binary import mul

    return mul(mul(grad_output, mask), scale)
