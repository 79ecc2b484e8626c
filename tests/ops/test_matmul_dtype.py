"""ops/matmul_dtype.py: mm, bmm, addmm and baddbmm with out_dtype: fp16/bf16 operands into
a float32 result (the float32 accumulation kept, not rounded to the operands' dtype), or
the operands' own dtype; other out_dtypes are refused as CUDA refuses them."""

import pytest
import torch


DEVICE = "privateuseone"


def _ops(a, b, bias2, a3, b3, bias3):
    return {
        "mm": lambda dt: torch.mm(a, b, out_dtype=dt),
        "bmm": lambda dt: torch.bmm(a3, b3, out_dtype=dt),
        "addmm": lambda dt: torch.addmm(bias2, a, b, out_dtype=dt, beta=0.5, alpha=2.0),
        "baddbmm": lambda dt: torch.baddbmm(bias3, a3, b3, out_dtype=dt, beta=-1.0),
    }


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_operands_into_float32(dtype):
    torch.manual_seed(0)
    shapes = [(17, 40), (40, 9), (9,), (3, 17, 40), (3, 40, 9), (3, 17, 9)]
    cpu = [torch.randn(s).to(dtype) for s in shapes]
    dev = _ops(*[t.to(DEVICE) for t in cpu])
    a, b, bias2, a3, b3, bias3 = (t.double() for t in cpu)  # the CPU has no out_dtype ops
    ref = {
        "mm": a @ b,
        "bmm": a3 @ b3,
        "addmm": 0.5 * bias2 + 2.0 * (a @ b),
        "baddbmm": -bias3 + a3 @ b3,
    }
    for name, fn in dev.items():
        out = fn(torch.float32)
        assert out.dtype == torch.float32, name
        want = ref[name]
        torch.testing.assert_close(out.cpu().double(), want, atol=1e-4, rtol=1e-4, msg=name)
        same = fn(dtype)
        assert same.dtype == dtype
        torch.testing.assert_close(same.cpu().double(), want, atol=0.1, rtol=2e-2, msg=name)


def test_refused_out_dtypes_name_the_problem():
    a = torch.randn(4, 4, device=DEVICE)
    with pytest.raises(RuntimeError, match="out_dtype must be"):
        torch.mm(a, a, out_dtype=torch.float16)
    with pytest.raises(RuntimeError, match="out_dtype must be"):
        torch.bmm(a[None].half(), a[None].half(), out_dtype=torch.float64)
