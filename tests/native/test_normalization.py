"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the
normalization family (batch, layer, group, rms norm)."""

import pytest

import torch
import torch.nn.functional as F

from helpers import DEV, grads, rand


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_norm_backward(dtype):
    x, w, b = rand((4, 6, 10), dtype), rand((10,), dtype), rand((10,), dtype)
    grads(lambda t, w, b: F.layer_norm(t, (10,), w, b, 1e-5), x, w, b, dtype=dtype, reduce=24)
    grads(lambda t: F.layer_norm(t, (6, 10)), x, dtype=dtype, reduce=60)
    w6, b6 = rand((6,), dtype), rand((6,), dtype)
    grads(lambda t, w, b: F.group_norm(t, 3, w, b, 1e-5), x, w6, b6, dtype=dtype, reduce=40)
    grads(lambda t: F.group_norm(t, 2), x, dtype=dtype, reduce=40)


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_train_and_eval(dtype, affine):
    x = rand((4, 3, 5, 6), dtype)
    n = x.numel() // 3
    if affine:
        grads(
            lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True),
            x,
            rand((3,), dtype),
            rand((3,), dtype),
            dtype=dtype,
            reduce=n,
        )
    else:
        grads(lambda t: F.batch_norm(t, None, None, training=True), x, dtype=dtype, reduce=n)

    def eval_bn(t):  # running statistics as constants
        rm = torch.full((3,), 0.5, dtype=t.dtype, device=t.device)
        rv = torch.full((3,), 2.0, dtype=t.dtype, device=t.device)
        return F.batch_norm(t, rm, rv, training=False)

    grads(eval_bn, x, dtype=dtype)


def test_batch_norm_module_running_stats():
    bn, bn_d = torch.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3).to(DEV)
    x = torch.randn(4, 3, 5, 6) * 2 + 1
    for _ in range(2):
        ref, out = bn(x), bn_d(x.to(DEV))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(bn_d.running_mean.cpu(), bn.running_mean)
    torch.testing.assert_close(bn_d.running_var.cpu(), bn.running_var)
    assert bn_d.num_batches_tracked.item() == 2
    bn.eval()
    bn_d.eval()
    torch.testing.assert_close(bn_d(x.to(DEV)).cpu(), bn(x), rtol=1e-5, atol=1e-5)
