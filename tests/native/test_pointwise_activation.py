"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
pointwise family's activations beyond the basic set: mish, logsigmoid, prelu, glu."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, assert_close, check, edge, rand, some_grads


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
FLOATS = [F32, F16, BF16]


@pytest.mark.parametrize("dtype", FLOATS)
def test_mish(dtype):
    x = rand((9, 7), dtype, -6, 6, noncontig=True)
    check(F.mish, x)
    check(F.mish, edge(dtype))
    some_grads(F.mish, x, dtype=dtype)
    some_grads(F.mish, edge(dtype)[:10], dtype=dtype)
    # out= and in-place
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.ops.aten.mish.out(x.to(DEV), out=out) is out
    assert_close(out, F.mish(x.double()), dtype, ref_same=F.mish(x))
    y = x.to(DEV)
    F.mish(y, inplace=True)
    assert_close(y, F.mish(x.double()), dtype, ref_same=F.mish(x))
    g = rand((9, 7), dtype)
    check(torch.ops.aten.mish_backward, g, x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsigmoid(dtype):
    x = rand((8, 5), dtype, -10, 10, noncontig=True)
    check(F.logsigmoid, x)
    check(F.logsigmoid, edge(dtype, 1000.0, -1000.0) if dtype != F16 else edge(dtype))
    some_grads(F.logsigmoid, x, dtype=dtype)
    some_grads(F.logsigmoid, edge(dtype)[:10], dtype=dtype)
    # the aten overloads directly; the buffer is not needed by our backward
    out, buf = torch.ops.aten.log_sigmoid_forward(x.to(DEV))
    assert_close(out, F.logsigmoid(x.double()), dtype, ref_same=F.logsigmoid(x))
    o, b = torch.empty(0, dtype=dtype, device=DEV), torch.empty(3, dtype=dtype, device=DEV)
    r = torch.ops.aten.log_sigmoid_forward.output(x.to(DEV), output=o, buffer=b)
    assert r[0] is o and r[1] is b
    assert_close(o, F.logsigmoid(x.double()), dtype, ref_same=F.logsigmoid(x))
    g = rand((8, 5), dtype)
    _, cpu_buf = torch.ops.aten.log_sigmoid_forward(x)
    ref = torch.ops.aten.log_sigmoid_backward(
        g.double(), x.double(), torch.ops.aten.log_sigmoid_forward(x.double())[1]
    )
    gi = torch.empty(0, dtype=dtype, device=DEV)
    res = torch.ops.aten.log_sigmoid_backward.grad_input(g.to(DEV), x.to(DEV), buf, grad_input=gi)
    assert res is gi
    assert_close(gi, ref, dtype, ref_same=torch.ops.aten.log_sigmoid_backward(g, x, cpu_buf))
    with pytest.raises(RuntimeError, match="floating"):
        torch.ops.aten.log_sigmoid_forward(torch.arange(3, device=DEV))


@pytest.mark.parametrize("dtype", FLOATS)
def test_prelu(dtype):
    x = rand((4, 3, 5, 2), dtype, -3, 3, noncontig=True)
    w = rand((3,), dtype, -1, 1)
    check(F.prelu, x, w)
    some_grads(F.prelu, x, w, dtype=dtype, reduce=40)
    some_grads(
        F.prelu, rand((6, 7), dtype), torch.tensor([0.25], dtype=dtype), dtype=dtype, reduce=42
    )
    some_grads(F.prelu, rand((5,), dtype), rand((1,), dtype), dtype=dtype, reduce=5)
    check(F.prelu, edge(dtype).reshape(1, -1), torch.tensor([0.1], dtype=dtype))
    # the aten kernels with a weight broadcast over self
    g = rand((4, 3, 5, 2), dtype)
    wb = w.view(1, 3, 1, 1)
    check(torch.ops.aten._prelu_kernel, x, wb)
    check(torch.ops.aten._prelu_kernel_backward, g, x, wb)


@pytest.mark.parametrize("dtype", FLOATS)
def test_glu(dtype):
    x = rand((4, 6, 8), dtype, -4, 4)
    for dim in (0, 1, -1, 2):
        check(F.glu, x, dim)
        some_grads(lambda t: F.glu(t, dim), x, dtype=dtype)
    xt = rand((8, 6), dtype).t()  # non-contiguous
    check(F.glu, xt, 0)
    some_grads(lambda t: F.glu(t, 0), xt, dtype=dtype)
    check(F.glu, edge(dtype, 2.0), 0)
    out = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.ops.aten.glu.out(x.to(DEV), 1, out=out) is out
    assert_close(out, F.glu(x.double(), 1), dtype, ref_same=F.glu(x, 1))
    g = rand((4, 3, 8), dtype)
    check(torch.ops.aten.glu_backward, g, x, 1)
    gi = torch.empty(0, dtype=dtype, device=DEV)
    assert torch.ops.aten.glu_backward.grad_input(g.to(DEV), x.to(DEV), 1, grad_input=gi) is gi
    assert_close(
        gi,
        torch.ops.aten.glu_backward(g.double(), x.double(), 1),
        dtype,
        ref_same=torch.ops.aten.glu_backward(g, x, 1),
    )


def test_glu_errors():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(torch.randn(3, 5, device=DEV), -1)
    with pytest.raises(RuntimeError, match="scalars"):
        F.glu(torch.tensor(1.0, device=DEV))
    with pytest.raises(RuntimeError, match="does not match"):
        torch.ops.aten.glu_backward(torch.randn(3, 3, device=DEV), torch.randn(3, 4, device=DEV), 1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_shrink_lambda_in_the_tensors_dtype(dtype):
    """hardshrink and the shrink backwards compare x with lambd rounded to x's dtype
    (fp16 0.30005 is within 0.3 there), softshrink subtracts it in float32: results
    equal PyTorch's bit for bit at the boundary."""
    vals = [0.30078125, 0.30004883, 0.3, 0.29980469, 0.5, 0.1, 0.0, -2.0]
    x = torch.tensor(vals + [-v for v in vals], dtype=dtype)
    g = torch.linspace(-1, 1, x.numel(), dtype=dtype)
    d, gd = x.to(DEV), g.to(DEV)
    for lam in (0.3, 0.5, 0.1):
        assert torch.equal(F.hardshrink(d, lam).cpu(), F.hardshrink(x, lam)), lam
        assert torch.equal(F.softshrink(d, lam).cpu(), F.softshrink(x, lam)), lam
        for op in (torch.ops.aten.hardshrink_backward, torch.ops.aten.softshrink_backward):
            assert torch.equal(op(gd, d, lam).cpu(), op(g, x, lam)), (op, lam)
