"""spec / spec_func: shared code asks by name, the active driver answers."""

import pytest

from torch_ext import backends


@pytest.fixture
def driver(monkeypatch):
    def use(name):
        monkeypatch.setattr(backends, "active_driver", lambda: name)

    return use


def test_host_specialisations(driver):
    driver("host")
    assert backends.spec("reduction_splits", 1, 10**6) == 1
    assert backends.spec_func("pointwise_block") is not None
    assert backends.spec("no_such_specialisation") is None


def test_cuda_specialisations(driver):
    driver("cuda")
    assert backends.spec_func("tanh") is not None  # libdevice-based
    assert backends.spec("pointwise_block", 10) is None  # shared default applies


def test_unknown_driver_has_none(driver):
    driver("no_such_driver")
    assert backends.spec_func("tanh") is None
    assert backends.spec("mm_config", 1, 1, 1, None) is None


def test_host_bf16_cast_rounds_to_nearest_even():
    """The interpreter's float32 -> bfloat16 cast truncates; the host driver's
    rounds as a GPU (and torch) does, NaN and infinities included."""
    import numpy as np
    import torch

    from torch_ext.backends.host.spec import _bf16_round_nearest

    g = torch.Generator().manual_seed(0)
    x = torch.randn(20000, generator=g) * torch.exp(torch.randn(20000, generator=g) * 20)
    special = [float("inf"), -float("inf"), 3.3895e38, -3.3895e38, 0.0, -0.0, 1e-40, -1e-40]
    x = torch.cat([x, torch.tensor(special)])
    got = _bf16_round_nearest(x.numpy())
    want = x.bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(got, want)
    nan = _bf16_round_nearest(np.array([float("nan"), -float("nan")], dtype=np.float32))
    assert torch.isnan(torch.from_numpy(nan.view(np.int16)).view(torch.bfloat16)).all()


def test_casts_to_bf16_round_the_value():
    """int32, float32 and float64 values cast to bfloat16 inside a kernel equal torch's
    conversion bit for bit (the interpreter alone truncates float32 and reinterprets the
    bits of integers and float64)."""
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    from helpers import KERNEL_DEVICE

    @triton.jit
    def cast(x, y, n, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        tl.store(y + i, tl.load(x + i, mask=i < n).to(tl.bfloat16), mask=i < n)

    g = torch.Generator().manual_seed(0)
    f32 = torch.randn(512, generator=g) * torch.exp(torch.randn(512, generator=g) * 10)
    for x in (f32, f32.double(), torch.randint(-(2**30), 2**30, (512,), generator=g).int()):
        y = torch.empty(512, dtype=torch.bfloat16, device=KERNEL_DEVICE)
        cast[(1,)](x.to(KERNEL_DEVICE), y, 512, BLOCK=512)
        got = y.cpu().view(torch.int16).numpy()
        assert np.array_equal(got, x.bfloat16().view(torch.int16).numpy()), x.dtype


def test_attention_kernels_fit_hopper_shared_memory(tmp_path):
    """The cuda driver's attention tiles at the head sizes that once needed more than an
    H100's 227 KB of shared memory per block (bf16 head 256, float32 head 128: the
    backward's dQ kernel took 352 and 272 KB), compiled for sm_90 without a GPU
    (tests_gpu/harness/smem_audit.py), both ways of computing dQ. To LLVM IR only, where
    Triton sets a kernel's shared memory (PTX and ptxas took 60% of the test's 6 min),
    in a Triton cache of its own (the placeholder cubins must not be found later)."""
    r = _harness(
        "smem_audit.py",
        SMEM_CASES="attention",
        SMEM_ATTENTION="bfloat16:256,float32:128",
        COMPILE_ONLY_STOP="llir",
        TRITON_CACHE_DIR=str(tmp_path),
    )
    assert r.returncode == 0 and "14 compiled, 0 over 227 KB" in r.stdout, (
        r.stdout + r.stderr[-3000:]
    )


def test_pointwise_weight_gradient_loads_are_pipelined():
    """The 1x1 weight gradient compiled for sm_90 without a GPU
    (tests_gpu/harness/pipeline_audit.py): NCHW 28x28 and 14x14 maps and channels_last
    load with cp.async (the 14x14 one because the kernel is told its pixels' divisibility
    by 4: without it, two-byte loads that Triton does not pipeline); 7x7 NCHW maps (49
    pixels) cannot, which is why the tuner also times them via channels_last. The
    implicit GEMM's weight gradient compiles both ways of finding its pixels, the strided
    input gradient both by phases and by the full gather; batch norm's loads are
    vectors on 14x14 maps."""
    r = _harness("pipeline_audit.py")
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    for case, pipelined in (("nchw_28", True), ("nchw_14", True), ("nchw_7", False),
                            ("channels_last_14", True), ("wgrad_3x3", True),
                            ("wgrad_3x3_fastdiv", True), ("wgrad_1d", True),
                            ("wgrad_1d_fastdiv", True), ("dgrad_s2_phases", True),
                            ("dgrad_s2", True)):  # fmt: skip
        assert f"{case} wgmma=True cp.async={pipelined}" in r.stdout, r.stdout
    # batch norm's activation loads: 8 bytes on 14x14 maps (told 196's divisibility by
    # 4: 2 bytes before) in its one-launch kernels (a channel fits a program there), 16
    # on 28x28 ones in the same kernels (a channel's 32Ki lanes: the wide lanes), on 56x56
    # ones in the one-launch kernels with a barrier (the map fits L2) and on 112x112 ones
    # in each of its four two-launch kernels (the pipelined statistics and sums loops as
    # asynchronous copies of 16 bytes)
    kernels = {
        14: ("_bn_resident_bwd_kernel", "_bn_resident_fwd_kernel"),
        28: ("_bn_resident_bwd_kernel", "_bn_resident_fwd_kernel"),
        56: ("_bn_coop_bwd_kernel", "_bn_coop_fwd_kernel"),
        112: ("_bn_apply_kernel", "_bn_bwd_dx_kernel", "_bn_bwd_sums_kernel", "_bn_stats_kernel"),
    }
    for hw, width in ((14, 8), (28, 16), (56, 16), (112, 16)):
        line = f"bn_{hw} " + " ".join(f"{k}={width}" for k in kernels[hw])
        assert line in r.stdout, r.stdout


def _harness(script, **env):
    """Runs tests_gpu/harness/<script> (compiling for sm_90, no GPU) in a process of its
    own, compiled mode (not the interpreter), with `env` added."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **env)
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run(
        [sys.executable, os.path.join(root, "tests_gpu", "harness", script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_no_kernel_writes_negative_zero_as_a_literal():
    """Triton 3.6 compiles a literal -0.0 (in tl.where, as a masked load's `other`) to
    +0.0, which made cross entropy's mean wrong on an H200 (session 37); kernels use
    `_math.negative_zero()`. No `-0.0` (or -0., -0e0) in torch_ext's kernel sources."""
    import io
    import pathlib
    import tokenize

    import torch_ext

    root = pathlib.Path(torch_ext.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        toks = [
            t
            for t in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
        ]
        for a, b in zip(toks, toks[1:]):
            if a.type == tokenize.OP and a.string == "-" and b.type == tokenize.NUMBER:
                try:
                    zero = float(b.string) == 0 and not b.string.isdigit()
                except ValueError:
                    zero = False
                if zero:
                    found.append(f"{path.relative_to(root)}:{b.start[0]}")
    assert not found, found
