"""Tests of ops/matmul_ws.py, the matrix products' warp-specialised Gluon kernel (Hopper
only). Gluon kernels do not run under Triton's interpreter: on the host (the default
"cpu" device) these tests check which products the tuner offers it and what each launch
is given (recorded, not run), and compile it for sm_90 without a GPU; on a Hopper GPU
(TORCH_EXT_TEST_DEVICE=privateuseone, the cuda driver) the same tests run it and check
its products against the CPU reference."""

import os
import subprocess
import sys

import pytest

import torch

from helpers import force_spec, randn, stored, to_ref, tuner_picks
from helpers import assert_kernel_close as assert_close

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _hopper():
    from torch_ext.backends import spec

    return bool(spec("mm_ws"))


def _pick_ws(monkeypatch, tile=0, seen=None):
    """The tuner picks the kernel's `tile`-th configuration where it is offered (a
    driver with TMA and the kernel, 4 multiprocessors on the host); `seen` collects
    each call's candidates. Returns (matmul, launches: (kernel name, grid, keyword
    arguments) each); off a Hopper GPU the kernel's launches are recorded, not run."""
    from torch_ext.ops import matmul, matmul_tma, matmul_ws

    if not _hopper():
        force_spec(monkeypatch, matmul_tma, mm_tma=True)
        force_spec(monkeypatch, matmul_ws, mm_ws=True, multiprocessors=4)

    tuner_picks(monkeypatch, matmul, matmul_ws.WS, tile, seen)
    launched = []
    real = matmul_ws.launch

    def spy(kernel, grid, *args, **kwargs):
        launched.append((kernel.fn.__name__, grid, args, kwargs))
        if _hopper():
            return real(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(matmul_ws, "launch", spy)
    return matmul, launched


@pytest.mark.parametrize("a_t,b_t", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("tile", [0, 1, 2, 3])
def test_each_orientation_read_in_place(a_t, b_t, tile, device, monkeypatch):
    """Each orientation (x @ W, x @ W.t(), x.t() @ dY, and both transposed) reaches the
    kernel with its operands as stored: the transposed flags and the row strides of
    what is in memory; rows, columns and K that end mid-tile (272 x 328 x 264). On a
    Hopper GPU, the product against the CPU's."""
    matmul, launched = _pick_ws(monkeypatch, tile)
    dtype = torch.bfloat16
    M, K, N = 272, 328, 264
    a, b = stored((M, K), a_t, dtype, device), stored((K, N), b_t, dtype, device)
    out = torch.empty(M, N, dtype=dtype, device=device)
    matmul.mm_out(a, b, out)
    [(name, grid, args, kw)] = launched
    assert name == "_mm_ws_kernel" and (kw["A_T"], kw["B_T"]) == (a_t, b_t)
    assert args[3:10] == (M, N, K, M if a_t else K, K if b_t else N, N, 1.0)
    assert (kw["BLOCK_M"], kw["BLOCK_N"]) == ((128, 256), (128, 128), (64, 256), (64, 128))[tile]
    if _hopper():
        assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=K)
    else:
        assert grid == (4,)  # a program a multiprocessor, whatever the sizes


def test_scaling_without_bias(device, monkeypatch):
    """addmm with beta 0 is alpha * a @ b: the kernel scales in its epilogue (fp16)."""
    matmul, launched = _pick_ws(monkeypatch)
    dtype = torch.float16
    a, b = randn((256, 320), dtype, device), randn((320, 384), dtype, device)
    out = torch.empty(256, 384, dtype=dtype, device=device)
    matmul.addmm_out(out, a, b, 0.0, 0.5, out)
    assert [(n, args[9]) for n, _, args, _ in launched] == [("_mm_ws_kernel", 0.5)]
    if _hopper():
        assert_close(out, (0.5 * to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=320)


def test_offered_only_where_it_applies(device, monkeypatch):
    """The tuner offers the kernel for one 16-bit matrix whose operands and output take
    descriptors, and no bias: not for float32, a batch, a bias, rows that are not
    16-byte multiples (GPT-2's 50,257-wide vocabulary), or a column-major output."""
    seen = []
    matmul, launched = _pick_ws(monkeypatch, seen=seen)
    bf = torch.bfloat16

    def offered(fn, *args):
        seen.clear()
        fn(*args)  # (one candidate, float32's: no tuning at all)
        return bool(seen) and any(c[-1] == "ws" for c in seen[-1])

    a, b = randn((256, 264), bf, device), randn((264, 256), bf, device)
    out = torch.empty(256, 256, dtype=bf, device=device)
    assert offered(matmul.mm_out, a, b, out)
    a32, b32 = a.float(), b.float()
    assert not offered(matmul.mm_out, a32, b32, torch.empty(256, 256, device=device))
    a3 = randn((2, 256, 264), bf, device)
    assert not offered(matmul.bmm_out, a3, b.expand(2, 264, 256), torch.empty_like(a3[:, :, :256]))
    bias = randn((256,), bf, device)
    assert not offered(matmul.addmm_out, bias, a, b, 1.0, 1.0, out)
    odd = randn((256, 260), bf, device)[:, :257]  # row stride 260: 520 bytes
    assert not offered(matmul.mm_out, odd, randn((257, 256), bf, device), out)
    out_t = torch.empty(256, 256, dtype=bf, device=device).t()
    assert not offered(matmul.mm_out, a, b, out_t)
    assert len(launched) == 1  # the first call's only


def test_not_offered_where_the_driver_lacks_it(device, monkeypatch):
    """A driver without the kernel (the host's interpreter; GPUs other than Hopper's
    compute capability 9.0, whose wgmma it issues) never gets its candidates."""
    from torch_ext.ops import matmul_ws

    seen = []
    matmul, launched = _pick_ws(monkeypatch, seen=seen)
    force_spec(monkeypatch, matmul_ws, mm_ws=None)
    a, b = randn((256, 264), torch.bfloat16, device), randn((264, 256), torch.bfloat16, device)
    matmul.mm_out(a, b, torch.empty(256, 256, dtype=torch.bfloat16, device=device))
    assert not any(c[-1] == "ws" for c in seen[0]) and launched == []


def test_compiles_for_hopper():
    """Each candidate in each orientation, and each tile that splits K (with the sum of
    its partial tiles), compiles for sm_90 with Triton's own compiler and no GPU
    (tests_gpu/harness/smem_audit.py): within an H100/H200's 227 KB of shared memory a
    block, and without spilled registers."""
    env = dict(os.environ, SMEM_CASES="matmul_ws", PYTHONPATH=ROOT)
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tests_gpu", "harness", "smem_audit.py")],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0 and "24 compiled, 0 over 227 KB, 0 spilling" in r.stdout, (
        r.stdout + r.stderr[-3000:]
    )
    assert r.stdout.count("_mm_ws_kernel") == 18 and r.stdout.count("_split_sum_kernel") == 6


def test_split_k_where_tiles_are_few(device, monkeypatch):
    """A product whose output tiles fill under half the multiprocessors (a weight
    gradient, x.t() @ dY: 192 x 256 over K = 4096, 4 tiles of 128 x 128 or 64 x 128;
    4 multiprocessors on the host) is also offered with K split: runs of at least 4
    steps, as many as fill the multiprocessors. The split candidate stores float32
    partial tiles into scratch of SPLIT blocks of whole tiles' rows, then one launch
    sums them into the output. On a Hopper GPU, the product against the CPU's."""
    from torch_ext.ops import matmul_ws

    seen = []
    matmul, launched = _pick_ws(monkeypatch, tile=4, seen=seen)
    if not _hopper():
        force_spec(monkeypatch, matmul_ws, multiprocessors=16)
    dtype = torch.bfloat16
    M, K, N = 192, 4096, 256
    a, b = stored((M, K), True, dtype, device), stored((K, N), False, dtype, device)
    out = torch.empty(M, N, dtype=dtype, device=device)
    matmul.mm_out(a, b, out)
    sms = matmul_ws.spec("multiprocessors")  # tiles: 4 of 128 x 128, 6 of 64 x 128
    want = [
        (128, 128, 64, 4, 4, min(sms // 4, 16), "ws"),
        (64, 128, 64, 4, 6, min(sms // 6, 16), "ws"),
    ]
    split_cands = [c for c in seen[0] if len(c) == 7 and c[-1] == "ws"]
    assert split_cands == [c for c in want if c[5] >= 2]
    (name, grid, args, kw), (sum_name, sum_grid, sum_args, sum_kw) = launched
    split = split_cands[0][5]
    assert name == "_mm_ws_kernel" and kw["SPLIT"] == split and kw["A_T"]
    scratch, mp = args[2], args[10]
    assert mp == 256 and scratch.dtype == torch.float32 and tuple(scratch.shape) == (split * mp, N)
    assert args[8] == N  # the scratch's row stride
    assert sum_name == "_split_sum_kernel" and sum_kw["SPLIT"] == split
    assert sum_args[:6] == (scratch, out, M, N, mp, N) and sum_grid == (M * N // 1024,)
    if _hopper():
        assert_close(out, (to_ref(a) @ to_ref(b)).to(dtype), dtype, reduce_dim=K)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_split_sum_adds_the_blocks_in_order(dtype, device):
    """_split_sum_kernel: c = the sum of SPLIT blocks of MP scratch rows, each block's
    first M rows (the rows past M, a partial tile's padding, never read: NaN here),
    into an output with a row stride of its own; float32 partials added in split order."""
    from torch_ext.ops import matmul_ws

    M, N, MP, split = 100, 48, 128, 3
    ws = torch.randn(split, MP, N, dtype=torch.float32)
    ws[:, M:] = float("nan")
    base = torch.zeros(M, 64, dtype=dtype, device=device)
    out = base[:, :N]
    matmul_ws.launch(
        matmul_ws._split_sum_kernel, (-(-M * N // 1024),), ws.reshape(split * MP, N).to(device),
        out, M, N, MP, 64, SPLIT=split, BLOCK=1024,
    )  # fmt: skip
    want = (ws[0, :M] + ws[1, :M]) + ws[2, :M]
    assert torch.equal(out.cpu(), want.to(dtype))
    assert torch.equal(base[:, N:].cpu(), torch.zeros(M, 64 - N, dtype=dtype))
