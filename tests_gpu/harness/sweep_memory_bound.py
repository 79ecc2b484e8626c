"""Variants of the memory-bound kernels issue 15 still misses (argmax, gelu, cross
entropy in bf16, layer norm), each timed against torch and the device-to-device copy on
torch's cuda tensors (standalone: no build needed). A line per variant: ms, GB/s, % of
copy; the shipped kernel is marked `*`.

    python tests_gpu/harness/sweep_memory_bound.py [argmax,gelu,ce,ln]
"""

import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from torch_ext.ops import cross_entropy as CE  # noqa: E402
from torch_ext.ops import normalization as N  # noqa: E402
from torch_ext.ops import reduction_arg as A  # noqa: E402
from torch_ext.ops._common import TL_DTYPES  # noqa: E402

WHICH = set((sys.argv[1] if len(sys.argv) > 1 else "argmax,gelu,ce,ln").split(","))


def bench(fn):
    return do_bench(fn, warmup=25, rep=200)


src = torch.empty(1 << 28, dtype=torch.uint8, device=DEV)
dst = torch.empty_like(src)
COPY = 2 * src.numel() / bench(lambda: dst.copy_(src)) / 1e6  # GB/s
print(f"device {torch.cuda.get_device_name()} copy {COPY:.0f} GB/s", flush=True)


def row(name, ms, nbytes, ref_ms=None):
    bw = nbytes / ms / 1e6
    extra = f"  vs torch {ref_ms / ms:.2f}x" if ref_ms else ""
    print(f"  {name:<44} {ms * 1e3:8.1f} us {bw:7.0f} GB/s {100 * bw / COPY:5.1f}%{extra}", flush=True)


# -- argmax ----------------------------------------------------------------------------
if "argmax" in WHICH:
    for dt in (torch.float16, torch.float32):
        x = torch.randn(8192, 8192, device=DEV, dtype=dt)
        out = torch.empty(8192, dtype=torch.int64, device=DEV)
        nbytes = x.numel() * x.element_size() + out.numel() * 8
        print(f"argmax 8192x8192 {dt}", flush=True)
        t_ref = bench(lambda: torch.argmax(x, 1))
        row("torch", t_ref, nbytes)
        row("* packed key (ours)", bench(lambda: A.argmax_out(x, 1, False, out)), nbytes, t_ref)
        assert torch.equal(out, torch.argmax(x, 1))
        for warps in (4, 8, 16):
            t = bench(
                lambda: A._arg_packed_kernel[(8192,)](
                    x, out, out, 8192, 8192, 1, IS_MAX=True, VALUES=False,
                    KEY=16 if dt == torch.float16 else 32, FLOAT=True, BLOCK_O=1,
                    BLOCK_R=8192, num_warps=warps,
                )  # fmt: skip
            )
            row(f"packed key, 1 row, {warps} warps", t, nbytes, t_ref)
        xv = x
        t = bench(lambda: A._launch_unpacked(xv, None, out, 8192, 8192, 1, dt, True))
        row("value then first index (before)", t, nbytes, t_ref)


# -- gelu ------------------------------------------------------------------------------
@triton.jit
def _erf_fast(x):
    # Abramowitz-Stegun 7.1.26 (|error| <= 1.5e-7): 1 - poly(t) exp(-x^2), t = 1/(1+p|x|)
    a = tl.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    r = 1.0 - poly * tl.exp(-a * a)
    return tl.where(x < 0, -r, r)


@triton.jit
def _gelu_kernel(x, y, n, BLOCK: tl.constexpr, FAST: tl.constexpr, TANH: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(x + i, mask=m).to(tl.float32)
    if TANH:
        inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        e = tl.exp(-2.0 * tl.abs(inner))
        th = (1.0 - e) / (1.0 + e)
        th = tl.where(inner < 0, -th, th)
        r = 0.5 * v * (1.0 + th)
    elif FAST:
        r = 0.5 * v * (1.0 + _erf_fast(v * 0.7071067811865476))
    else:
        r = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    tl.store(y + i, r.to(y.dtype.element_ty), mask=m)


if "gelu" in WHICH:
    n = 64 << 20
    x = torch.randn(n, device=DEV, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    for tanh in (False, True):
        approx = "tanh" if tanh else "none"
        print(f"gelu({approx}) 64M bf16", flush=True)
        t_ref = bench(lambda: F.gelu(x, approximate=approx))
        row("torch", t_ref, nbytes)
        ref = F.gelu(x.float(), approximate=approx)
        for fast in ((False, True) if not tanh else (False,)):
            for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 4), (4096, 8)):
                def run():
                    _gelu_kernel[(triton.cdiv(n, block),)](
                        x, y, n, BLOCK=block, FAST=fast, TANH=tanh, num_warps=warps
                    )

                t = bench(run)
                err = (y.float() - ref).abs().max().item()
                mark = "*" if (block, warps, fast) == (1024, 4, False) else " "
                name = f"{mark} {'A&S erf' if fast else 'libdevice'} BLOCK {block} w{warps}"
                row(f"{name} err {err:.1e}", t, nbytes, t_ref)


# -- cross entropy ---------------------------------------------------------------------
if "ce" in WHICH:
    for dt in (torch.bfloat16, torch.float32):
        Nr, C = 4096, 32768
        x = torch.randn(Nr, C, device=DEV, dtype=dt)
        t = torch.randint(0, C, (Nr,), device=DEV)
        rows = torch.empty(Nr, device=DEV)
        lse = torch.empty(Nr, device=DEV)
        flag = torch.zeros(4, dtype=torch.int64, device=DEV)
        nbytes = x.numel() * x.element_size()
        print(f"cross_entropy rows 4096x32768 {dt}", flush=True)
        t_ref = bench(lambda: F.cross_entropy(x, t))
        row("torch (F.cross_entropy)", t_ref, nbytes)
        shipped = CE._tiling(C, x.element_size())
        for block, warps in ((4096, 4), (8192, 8), (8192, 4), (16384, 8), (16384, 16)):
            def run():
                CE._ce_rows_kernel[(Nr,)](
                    x, t, rows, lse, C, C, -100, flag, BLOCK=block, num_warps=warps
                )

            ms = bench(run)
            ref = torch.logsumexp(x.float(), 1)
            err = (lse - ref).abs().max().item()
            mark = "*" if (block, warps) == shipped else " "
            row(f"{mark} rows kernel BLOCK {block} w{warps} err {err:.1e}", ms, nbytes, t_ref)


# -- layer norm ------------------------------------------------------------------------
@triton.jit
def _add2(a, b, c, d):
    return a + c, b + d


@triton.jit
def _ln_shifted_kernel(x, w, b, y, mean_out, rstd_out, D, eps, BLOCK_N: tl.constexpr):
    # one pass: sums of (x - k) and (x - k)^2 about the row's first element, one
    # two-value reduction
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK_N)
    cm = c < D
    v = tl.load(x + row * D + c, mask=cm, other=0).to(tl.float32)
    k = tl.load(x + row * D).to(tl.float32)
    d = tl.where(cm, v - k, 0.0)
    s1, s2 = tl.reduce((d, d * d), 0, _add2)
    mu = s1 / D
    var = tl.maximum(s2 / D - mu * mu, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    mean = k + mu
    tl.store(mean_out + row, mean)
    tl.store(rstd_out + row, rstd)
    out = (v - mean) * rstd * tl.load(w + c, mask=cm).to(tl.float32) + tl.load(b + c, mask=cm).to(tl.float32)
    tl.store(y + row * D + c, out.to(y.dtype.element_ty), mask=cm)


if "ln" in WHICH:
    M = D = 8192
    x = torch.randn(M, D, device=DEV, dtype=torch.float16)
    w = torch.randn(D, device=DEV, dtype=torch.float16)
    b = torch.randn(D, device=DEV, dtype=torch.float16)
    y = torch.empty_like(x)
    mean = torch.empty(M, device=DEV)
    rstd = torch.empty(M, device=DEV)
    nbytes = 2 * x.numel() * x.element_size()
    print("layer_norm 8192x8192 fp16", flush=True)
    t_ref = bench(lambda: F.layer_norm(x, (D,), w, b))
    row("torch", t_ref, nbytes)
    ref = F.layer_norm(x.float(), (D,), w.float(), b.float())
    row("* ours", bench(lambda: N._norm_forward(x, w, b, M, D, 1e-5, False, y, mean, rstd)), nbytes, t_ref)
    for warps in (4, 8, 16):
        def run():
            N._norm_fwd_tile_kernel[(M,)](
                x, w, b, y, mean, rstd, M, D, 1e-5, HAS_W=True, HAS_B=True, RMS=False,
                ACC=TL_DTYPES[torch.float32], BLOCK_M=1, BLOCK_N=D, num_warps=warps,
            )  # fmt: skip

        row(f"two reductions, {warps} warps", bench(run), nbytes, t_ref)
    for warps in (4, 8, 16):
        def run():
            _ln_shifted_kernel[(M,)](x, w, b, y, mean, rstd, D, 1e-5, BLOCK_N=D, num_warps=warps)

        ms = bench(run)
        err = (y.float() - ref).abs().max().item()
        row(f"shifted one pass, {warps} warps, err {err:.1e}", ms, nbytes, t_ref)
