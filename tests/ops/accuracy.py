"""Accuracy helpers (seed 004's method): compare against a float64 reference
computed by PyTorch on CPU; tolerances by dtype, atol scaled for reductions."""

import torch

RTOL = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1.3e-6, torch.float64: 1e-7}
ATOL = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5, torch.float64: 1e-7}
FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int32, torch.int64, torch.int16]


def to_ref(t):
    """A CPU float64 copy of t (integers and bool kept)."""
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach().cpu()
    return t.double() if t.is_floating_point() else t


def assert_close(res, ref, dtype=None, reduce_dim=1, equal_nan=True, atol=None, rtol=None):
    res = res.detach().cpu()
    dtype = dtype or res.dtype
    if not dtype.is_floating_point:
        assert res.dtype == ref.dtype, (res.dtype, ref.dtype)
        torch.testing.assert_close(res, ref, rtol=0, atol=0)
        return
    ref = ref.to(res.dtype) if ref.dtype != res.dtype else ref
    atol = ATOL[dtype] * reduce_dim if atol is None else atol
    rtol = RTOL[dtype] if rtol is None else rtol
    torch.testing.assert_close(
        res.double(), ref.double(), atol=atol, rtol=rtol, equal_nan=equal_nan
    )


def randn(shape, dtype, device, low=None, high=None, noncontig=False):
    if dtype.is_floating_point:
        t = torch.randn(shape, dtype=torch.float64)
        if low is not None:
            t = torch.rand(shape, dtype=torch.float64) * (high - low) + low
        t = t.to(dtype)
    elif dtype == torch.bool:
        t = torch.randint(0, 2, shape).bool()
    else:
        t = torch.randint(
            -100 if low is None else int(low),
            100 if high is None else int(high),
            shape,
            dtype=dtype,
        )
    if noncontig and t.dim() >= 2:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t.to(device)
