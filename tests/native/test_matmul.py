"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the matmul
family (mm/bmm/addmm/linear, out= and in-place)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, assert_close, check, grads, rand, to_dev, to_f64


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def test_linear_backward():
    x, w, b = rand((5, 7), F32), rand((3, 7), F32), rand((3,), F32)
    grads(F.linear, x, w, b, reduce=7)
    grads(lambda a, b: a @ b, rand((2, 4, 5), F32), rand((5, 3), F32), reduce=8)


def _out(fn, *args, like=None, **kwargs):
    """fn(*args, out=...) on the device against fn on CPU (float64 when floating)."""
    same = fn(*args, **kwargs)
    outs = (
        tuple(torch.empty(0, dtype=s.dtype, device=DEV) for s in same)
        if isinstance(same, tuple)
        else torch.empty(0, dtype=same.dtype, device=DEV)
    )
    dev_args = to_dev(args)
    r = fn(*dev_args, out=outs, **kwargs)
    ref = fn(*to_f64(args), **kwargs)
    numel = max((a.numel() for a in args if isinstance(a, torch.Tensor)), default=1)
    red = max(1, numel // max(1, (same[0] if isinstance(same, tuple) else same).numel()))
    assert_close(tuple(outs) if isinstance(outs, tuple) else outs, ref, ref_same=same, reduce=red)
    return r


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_blas(dtype):
    a, b = rand((7, 5), dtype), rand((5, 3), dtype)
    c = rand((7, 3), dtype)
    check(torch.mm, a, b, reduce=5)
    check(torch.mm, a.t().contiguous().t(), b, reduce=5)
    check(torch.addmm, c, a, b, beta=0.5, alpha=2, reduce=5)
    check(torch.addmm, c[:1], a, b, reduce=5)
    check(torch.mv, a, rand((5,), dtype), reduce=5)
    check(torch.dot, rand((9,), dtype), rand((9,), dtype), reduce=9)
    check(torch.outer, rand((4,), dtype), rand((3,), dtype))
    A, B = rand((2, 7, 5), dtype), rand((2, 5, 3), dtype)
    check(torch.bmm, A, B, reduce=5)
    check(torch.baddbmm, rand((2, 7, 3), dtype), A, B, beta=0.3, alpha=-1, reduce=5)
    check(torch.matmul, A, b, reduce=5)
    check(F.linear, a, rand((4, 5), dtype), rand((4,), dtype), reduce=5)
    check(torch.mm, torch.empty(0, 5, dtype=dtype), b)
    check(torch.mm, rand((3, 0), dtype), rand((0, 4), dtype))


def test_blas_out_inplace():
    a, b, c = rand((7, 5), F32), rand((5, 3), F32), rand((7, 3), F32)
    _out(torch.mm, a, b)
    _out(torch.addmm, c, a, b, alpha=0.5)
    _out(torch.mv, a, rand((5,), F32))
    A, B, C = rand((2, 7, 5), F32), rand((2, 5, 3), F32), rand((2, 7, 3), F32)
    _out(torch.bmm, A, B)
    _out(torch.baddbmm, C, A, B, beta=2.0)
    y = c.clone().to(DEV)
    y.addmm_(a.to(DEV), b.to(DEV), beta=0.5)
    assert_close(y, torch.addmm(c.double(), a.double(), b.double(), beta=0.5), reduce=5)
    y = C.clone().to(DEV)
    y.baddbmm_(A.to(DEV), B.to(DEV))
    assert_close(y, torch.baddbmm(C.double(), A.double(), B.double()), reduce=5)
    big = rand((1000, 37), F32)
    check(torch.mm, big, rand((37, 9), F32), reduce=37)


def test_tma_scratch_allocator_in_each_thread():
    """Triton asks its allocator for the TMA kernel's descriptor scratch
    (ops/matmul_tma.py); Triton keeps it per thread (a context variable), so each
    launching thread sets its own (the autograd engine's device thread launches
    backward products): device memory of the asked size on the current device."""
    import threading

    from triton.runtime import _allocation
    from torch_ext.ops import matmul_tma

    got = []

    def launcher():
        matmul_tma.ensure_allocator(torch.device(DEV))
        buf = _allocation._allocator.get()(384, 128, None)
        got.append((buf.device, buf.numel()))

    t = threading.Thread(target=launcher)
    t.start()
    t.join()
    assert got == [(torch.device(DEV, torch.privateuseone.current_device()), 384)]
