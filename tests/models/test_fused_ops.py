"""torch.ops.torch_ext fused operators through their autograd registrations:
forward and backward against plain PyTorch on CPU in float64, FakeTensor
shapes/dtypes, and torch.compile(aot_eager)."""

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

from torch_ext import fused

from helpers import ATOL, DEV, FLOAT_DTYPES, RTOL  # seed 004's table; atol scaled for reductions

DTYPES = FLOAT_DTYPES
ROWS, D = 7, 48  # odd row count; rows*D not a power of two


def check(res, ref, dtype, scale=1):
    assert res.device.type == DEV
    assert res.dtype == dtype, (res.dtype, dtype)
    ref = ref.to(dtype).double()  # the best the dtype can hold
    torch.testing.assert_close(
        res.detach().cpu().double(),
        ref,
        atol=ATOL[dtype] * scale,
        rtol=RTOL[dtype] * max(1, scale**0.5),
    )


def leaves(dtype, *shapes, seed=0):
    """Device leaves in `dtype` and float64 CPU leaves holding the same values."""
    g = torch.Generator().manual_seed(seed)
    dev, ref = [], []
    for s in shapes:
        t = torch.randn(s, generator=g, dtype=torch.float64).to(dtype)
        dev.append(t.to(DEV).requires_grad_())
        ref.append(t.double().requires_grad_())
    return dev, ref


def run_both(dev_fn, ref_fn, dev_in, ref_in, dtype, grad_scale=None):
    out, ref = dev_fn(*dev_in), ref_fn(*ref_in)
    outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    g = torch.Generator().manual_seed(1)
    grads = [torch.randn(r.shape, generator=g, dtype=torch.float64).to(dtype) for r in refs]
    torch.autograd.backward(outs, [gr.to(DEV) for gr in grads])
    torch.autograd.backward(refs, [gr.double() for gr in grads])
    for o, r in zip(outs, refs):
        check(o, r, dtype, scale=2)
    for i, (d, r) in enumerate(zip(dev_in, ref_in)):
        assert d.grad is not None, f"input {i} got no gradient"
        check(d.grad, r.grad, dtype, scale=(grad_scale or {}).get(i, 4))


def rms_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(dtype):
    (x, w), (xr, wr) = leaves(dtype, (ROWS, D), (D,))
    run_both(
        lambda x, w: fused.rms_norm(x, w, 1e-6),
        lambda x, w: rms_ref(x, w, 1e-6),
        (x, w),
        (xr, wr),
        dtype,
        grad_scale={1: ROWS * 4},
    )


def test_rms_norm_default_eps_and_3d():
    # eps=None means finfo(input dtype).eps, as in torch.nn.functional.rms_norm.
    (x, w), (xr, wr) = leaves(torch.float32, (2, 5, D), (D,))
    eps = torch.finfo(torch.float32).eps
    run_both(
        lambda x, w: fused.rms_norm(x, w),
        lambda x, w: rms_ref(x, w, eps),
        (x, w),
        (xr, wr),
        torch.float32,
        grad_scale={1: 40},
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_skip_rms_norm(dtype):
    (x, r, w), (xr, rr, wr) = leaves(dtype, (ROWS, D), (ROWS, D), (D,))
    run_both(
        lambda x, r, w: fused.skip_rms_norm(x, r, w, 1e-6),
        lambda x, r, w: rms_ref(x + r, w, 1e-6),
        (x, r, w),
        (xr, rr, wr),
        dtype,
        grad_scale={2: ROWS * 4},
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_add_rms_norm(dtype):
    (x, r, w), (xr, rr, wr) = leaves(dtype, (ROWS, D), (ROWS, D), (D,))
    run_both(
        lambda x, r, w: fused.fused_add_rms_norm(x, r, w, 1e-6),
        lambda x, r, w: (rms_ref(x + r, w, 1e-6), x + r),
        (x, r, w),
        (xr, rr, wr),
        dtype,
        grad_scale={2: ROWS * 4},
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_skip_layer_norm(dtype):
    (x, r, w, b), (xr, rr, wr, br) = leaves(dtype, (ROWS, D), (ROWS, D), (D,), (D,))
    run_both(
        lambda x, r, w, b: fused.skip_layer_norm(x, r, w, b, 1e-5),
        lambda x, r, w, b: F.layer_norm(x + r, (D,), w, b, 1e-5),
        (x, r, w, b),
        (xr, rr, wr, br),
        dtype,
        grad_scale={2: ROWS * 4, 3: ROWS * 4},
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_and_mul(dtype, approximate):
    (x,), (xr,) = leaves(dtype, (3, 5, 2 * D))
    run_both(
        lambda x: fused.gelu_and_mul(x, approximate),
        lambda x: F.gelu(x[..., :D], approximate=approximate) * x[..., D:],
        (x,),
        (xr,),
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_and_mul(dtype):
    (x,), (xr,) = leaves(dtype, (ROWS, 2 * D))
    run_both(fused.silu_and_mul, lambda x: F.silu(x[..., :D]) * x[..., D:], (x,), (xr,), dtype)


def rope_ref(x, cos, sin, interleaved):
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        return torch.stack((o1, o2), dim=-1).flatten(-2)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_embedding(dtype, interleaved):
    b, h, t, hd = 2, 3, 5, 16
    (x,), (xr,) = leaves(dtype, (b, h, t, hd))
    ang = torch.arange(t, dtype=torch.float64)[:, None] * (0.5 ** torch.arange(hd // 2))
    cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)  # (t, hd/2), broadcast over b, h
    run_both(
        lambda x: fused.rotary_embedding(x, cos.to(DEV), sin.to(DEV), interleaved),
        lambda x: rope_ref(x, cos.double(), sin.double(), interleaved),
        (x,),
        (xr,),
        dtype,
    )


# ---- FakeTensor / meta ------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_fake_tensor_shapes(dtype):
    ops = torch.ops.torch_ext
    stat = torch.float32
    with FakeTensorMode():
        x = torch.empty(4, 6, D, device=DEV, dtype=dtype)
        r = torch.empty(4, 6, D, device=DEV, dtype=dtype)
        w = torch.empty(D, device=DEV, dtype=dtype)
        cs = torch.empty(6, D // 2, device=DEV, dtype=dtype)
        cases = {
            "rms_norm": (ops.rms_norm(x, [D], w, 1e-6), [((4, 6, D), dtype), ((4, 6, 1), stat)]),
            "skip_rms_norm": (
                ops.skip_rms_norm(x, r, [D], w, 1e-6),
                [((4, 6, D), dtype), ((4, 6, 1), stat)],
            ),
            "fused_add_rms_norm": (
                ops.fused_add_rms_norm(x, r, [D], w, 1e-6),
                [((4, 6, D), dtype), ((4, 6, D), dtype)],
            ),
            "skip_layer_norm": (
                ops.skip_layer_norm(x, r, [D], w, w, 1e-5),
                [((4, 6, D), dtype), ((4, 6, 1), stat), ((4, 6, 1), stat)],
            ),
            "gelu_and_mul": (ops.gelu_and_mul(x, "tanh"), [((4, 6, D // 2), dtype)]),
            "silu_and_mul": (ops.silu_and_mul(x), [((4, 6, D // 2), dtype)]),
            "rotary_embedding": (ops.rotary_embedding(x, cs, cs, False), [((4, 6, D), dtype)]),
            "rms_norm_backward": (
                ops.rms_norm_backward(x, x, [D], x[..., :1].float(), w, [True, True]),
                [((4, 6, D), dtype), ((D,), dtype)],
            ),
            "silu_and_mul_backward": (
                ops.silu_and_mul_backward(x[..., : D // 2], x),
                [((4, 6, D), dtype)],
            ),
        }
        for name, (out, want) in cases.items():
            outs = out if isinstance(out, (tuple, list)) else (out,)
            assert len(outs) == len(want), name
            for o, (shape, dt) in zip(outs, want):
                assert isinstance(o, torch._subclasses.fake_tensor.FakeTensor), name
                assert tuple(o.shape) == shape and o.dtype == dt, (name, o.shape, o.dtype)
                assert o.device.type == DEV, name


def _op_cases(x, w, cs):
    ops = torch.ops.torch_ext
    h = x.shape[-1]
    return {
        "rms_norm": lambda: ops.rms_norm(x, [h], w, 1e-6),
        "skip_rms_norm": lambda: ops.skip_rms_norm(x, x, [h], w, 1e-6),
        "fused_add_rms_norm": lambda: ops.fused_add_rms_norm(x, x, [h], w, 1e-6),
        "skip_layer_norm": lambda: ops.skip_layer_norm(x, x, [h], w, w, 1e-5),
        "gelu_and_mul": lambda: ops.gelu_and_mul(x),
        "silu_and_mul": lambda: ops.silu_and_mul(x),
        "rotary_embedding": lambda: ops.rotary_embedding(x, cs, cs, False),
        "rms_norm_backward": lambda: ops.rms_norm_backward(
            x, x, [h], x[..., :1].float().contiguous(), w, [True, True]
        ),
        "silu_and_mul_backward": lambda: ops.silu_and_mul_backward(x[..., : h // 2], x),
        "gelu_and_mul_backward": lambda: ops.gelu_and_mul_backward(x[..., : h // 2], x),
        "rotary_embedding_backward": lambda: ops.rotary_embedding_backward(x, cs, cs, False),
    }


def test_fake_strides_match_kernels():
    """torch.compile plans views from the fake outputs' strides: they must be
    the real kernels' strides, also for a non-contiguous (transposed) input."""

    def strides(out):
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [(tuple(o.shape), o.stride()) for o in outs if o is not None]

    x = torch.randn(2, 5, 3, 16).to(DEV).transpose(1, 2)
    real = {
        k: strides(f())
        for k, f in _op_cases(x, torch.randn(16).to(DEV), torch.randn(5, 8).to(DEV)).items()
    }
    with FakeTensorMode():
        x = torch.empty(2, 5, 3, 16, device=DEV).transpose(1, 2)
        fake = {
            k: strides(f())
            for k, f in _op_cases(
                x, torch.empty(16, device=DEV), torch.empty(5, 8, device=DEV)
            ).items()
        }
    bad = {k: (real[k], fake[k]) for k in real if real[k] != fake[k]}
    assert not bad, bad


def test_meta_device():
    x = torch.empty(3, 2 * D, device="meta", dtype=torch.bfloat16)
    w = torch.empty(2 * D, device="meta", dtype=torch.bfloat16)
    y, rstd = torch.ops.torch_ext.rms_norm(x, [2 * D], w, None)
    assert y.shape == x.shape and y.dtype == torch.bfloat16 and y.device.type == "meta"
    assert rstd.shape == (3, 1) and rstd.dtype == torch.float32
    z = torch.ops.torch_ext.silu_and_mul(x)
    assert z.shape == (3, D) and z.device.type == "meta"


def test_compile_aot_eager_fused_block():
    """A pre-norm block built from the fused ops compiles (one graph, no
    breaks) and matches eager on the device and the CPU float64 reference."""
    from torch._dynamo.testing import CompileCounterWithBackend

    t, hd = 5, 16
    ang = torch.arange(t, dtype=torch.float64)[:, None] * (0.5 ** torch.arange(hd // 2))
    cos, sin = ang.cos().float(), ang.sin().float()

    def make_block(add_rms, rope, silu_mul, skip_rms):
        def block(x, r, w, wg, cos, sin):
            h, r2 = add_rms(x, r, w, 1e-6)
            h = rope(h.view(2, t, 2, hd).transpose(1, 2), cos, sin)
            h = h.transpose(1, 2).reshape(2, t, 2 * hd)
            y = silu_mul(h @ wg)
            return skip_rms(y, r2, w, 1e-6).sum()

        return block

    block = make_block(
        fused.fused_add_rms_norm, fused.rotary_embedding, fused.silu_and_mul, fused.skip_rms_norm
    )
    ref_block = make_block(
        lambda x, r, w, eps: (rms_ref(x + r, w, eps), x + r),
        lambda x, c, s: rope_ref(x, c, s, False),
        lambda x: F.silu(x[..., : x.shape[-1] // 2]) * x[..., x.shape[-1] // 2 :],
        lambda x, r, w, eps: rms_ref(x + r, w, eps),
    )

    (x, r, w, wg), refs = leaves(
        torch.float32, (2, t, 2 * hd), (2, t, 2 * hd), (2 * hd,), (2 * hd, 4 * hd)
    )
    torch._dynamo.reset()
    cnt = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(block, backend=cnt, fullgraph=True)
    out = compiled(x, r, w, wg, cos.to(DEV), sin.to(DEV))
    out.backward()
    assert cnt.frame_count == 1
    names = {str(n.target) for g in cnt.graphs for n in g.graph.nodes if n.op == "call_function"}
    assert any("torch_ext" in n for n in names), names
    ref = ref_block(*refs, cos.double(), sin.double())
    ref.backward()
    torch.testing.assert_close(out.detach().cpu().double(), ref.detach(), atol=1e-4, rtol=1e-4)
    for d, rr in zip((x, r, w, wg), refs):
        torch.testing.assert_close(d.grad.cpu().double(), rr.grad, atol=1e-4, rtol=1e-4)
    torch._dynamo.reset()
