"""torch.compile(aot_eager) of the demo models, autocast on privateuseone, and
scaled_dot_product_attention forward/backward, all against CPU."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend

import torch_ext  # noqa: F401
from torch_ext.demo import MLPClassifier, TinyDecoder

from helpers import DEV


# ---- torch.compile ------------------------------------------------------------
@pytest.mark.parametrize(
    "cls,kw",
    [(MLPClassifier, {}), (TinyDecoder, {"norm": "rms"}), (TinyDecoder, {"norm": "layer"})],
    ids=["mlp", "decoder_rms", "decoder_layer"],
)
def test_compile_aot_eager(cls, kw):
    torch.manual_seed(0)
    cpu_model = cls(**kw)
    eager = copy.deepcopy(cpu_model).to(DEV)
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    torch._dynamo.reset()
    cnt = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(dev_model, backend=cnt, fullgraph=True)
    inputs, targets = cls.batch(seed=1)
    loss = cls.loss(compiled, inputs.to(DEV), targets.to(DEV))
    loss.backward()
    assert cnt.frame_count == 1 and cnt.op_count > 5, (cnt.frame_count, cnt.op_count)
    eager_loss = cls.loss(eager, inputs.to(DEV), targets.to(DEV))
    eager_loss.backward()
    cpu_loss = cls.loss(cpu_model, inputs, targets)
    cpu_loss.backward()
    assert loss.device.type == DEV
    torch.testing.assert_close(loss.detach().cpu(), eager_loss.detach().cpu(), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(loss.detach().cpu(), cpu_loss.detach(), atol=1e-5, rtol=1e-5)
    eager_params = dict(eager.named_parameters())
    dev_params = dict(dev_model.named_parameters())
    for name, p in cpu_model.named_parameters():
        g = dev_params[name].grad
        assert g is not None and g.device.type == DEV, name
        torch.testing.assert_close(g.cpu(), eager_params[name].grad.cpu(), atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(g.cpu(), p.grad, atol=1e-5, rtol=1e-4)
    # a second call reuses the compiled graph
    cls.loss(compiled, inputs.to(DEV), targets.to(DEV))
    assert cnt.frame_count == 1
    torch._dynamo.reset()


# ---- autocast -----------------------------------------------------------------
LOW = [torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", LOW, ids=["bf16", "fp16"])
def test_autocast_op_dtypes(dtype):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 8, generator=g), torch.randn(8, 8, generator=g)
    lin, ln = nn.Linear(8, 8), nn.LayerNorm(8)
    targets = torch.randint(0, 8, (6,), generator=g)
    results = {}
    for device in ("cpu", DEV):
        lin_d, ln_d = copy.deepcopy(lin).to(device), copy.deepcopy(ln).to(device)
        a_d, b_d, t_d = a.to(device), b.to(device), targets.to(device)
        with torch.autocast(device, dtype=dtype):
            h = lin_d(a_d)
            out = {
                "linear": h,
                "matmul": a_d @ b_d,
                "mm": torch.mm(a_d, b_d),
                "bmm": torch.bmm(a_d[None], b_d[None]),
                "softmax": torch.softmax(h, -1),
                "log_softmax": F.log_softmax(h, -1),
                "layer_norm": ln_d(h),
                "cross_entropy": F.cross_entropy(h, t_d),
                "add": h + 1,  # promote-free ops keep the input's dtype
            }
        results[device] = out
    dev = results[DEV]
    for name in ("linear", "matmul", "mm", "bmm"):
        assert dev[name].dtype == dtype, (name, dev[name].dtype)
    for name in ("softmax", "log_softmax", "layer_norm", "cross_entropy"):
        assert dev[name].dtype == torch.float32, (name, dev[name].dtype)
    assert dev["add"].dtype == dtype
    # as CUDA's autocast lists do; and the values track CPU autocast
    for name, t in dev.items():
        assert t.device.type == DEV, name
        torch.testing.assert_close(
            t.float().cpu(),
            results["cpu"][name].float(),
            atol=3e-2,
            rtol=3e-2,
            msg=lambda m: f"{name}: {m}",
        )


@pytest.mark.parametrize("dtype", LOW, ids=["bf16", "fp16"])
def test_autocast_training_step(dtype):
    """One SGD step of the decoder under autocast: the device tracks CPU
    autocast (loose tolerance, low-precision matmuls)."""
    results = {}
    for device in ("cpu", DEV):
        torch.manual_seed(0)
        model = TinyDecoder(layers=1, norm="layer").to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        inputs, targets = TinyDecoder.batch(seed=0)
        losses = []
        for _ in range(2):
            with torch.autocast(device, dtype=dtype):
                logits = model(inputs.to(device))
                loss = F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), targets.to(device).reshape(-1)
                )
            assert logits.dtype == dtype and loss.dtype == torch.float32
            opt.zero_grad()
            loss.backward()
            # parameters and their gradients stay fp32 under autocast
            assert all(p.grad.dtype == torch.float32 for p in model.parameters())
            opt.step()
            losses.append(loss.item())
        results[device] = (
            losses,
            {k: v.detach().float().cpu() for k, v in model.state_dict().items()},
        )
    (dev_losses, dev_params), (cpu_losses, cpu_params) = results[DEV], results["cpu"]
    assert dev_losses[1] != dev_losses[0]
    torch.testing.assert_close(dev_losses, cpu_losses, atol=2e-2, rtol=1e-2)
    for k in cpu_params:
        torch.testing.assert_close(
            dev_params[k], cpu_params[k], atol=2e-2, rtol=2e-2, msg=lambda m: f"{k}: {m}"
        )


# ---- scaled_dot_product_attention ---------------------------------------------
def _mask_bool():
    g = torch.Generator().manual_seed(5)
    m = torch.rand(9, 9, generator=g) > 0.4
    return m | torch.eye(9, dtype=torch.bool)  # every row attends somewhere


SDPA_CASES = {
    "causal": lambda: {"is_causal": True},
    "bool_mask": lambda: {"attn_mask": _mask_bool()},
    "bool_mask_4d": lambda: {"attn_mask": _mask_bool()[None, None].expand(2, 3, 9, 9)},
    "float_mask": lambda: {
        "attn_mask": torch.randn(9, 9, generator=torch.Generator().manual_seed(6))
    },
    "causal_scale": lambda: {"is_causal": True, "scale": 0.3},
}


@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_sdpa_forward_backward(case, dtype):
    g = torch.Generator().manual_seed(0)
    b, h, t, d = 2, 3, 9, 16
    q, k, v = (torch.randn(b, h, t, d, generator=g).to(dtype) for _ in range(3))
    grad = torch.randn(b, h, t, d, generator=g).to(dtype)
    kw = SDPA_CASES[case]()
    ref_in = [x.double().requires_grad_() for x in (q, k, v)]
    ref_kw = {
        n: (x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x)
        for n, x in kw.items()
    }
    ref = F.scaled_dot_product_attention(*ref_in, **ref_kw)
    ref.backward(grad.double())
    dev_in = [x.to(DEV).requires_grad_() for x in (q, k, v)]
    dev_kw = {
        n: (
            x.to(DEV, dtype)
            if isinstance(x, torch.Tensor) and x.is_floating_point()
            else x.to(DEV)
            if isinstance(x, torch.Tensor)
            else x
        )
        for n, x in kw.items()
    }
    out = F.scaled_dot_product_attention(*dev_in, **dev_kw)
    out.backward(grad.to(DEV))
    tol = {torch.float32: (1e-5, 1e-4), torch.bfloat16: (3e-2, 3e-2)}[dtype]
    assert out.dtype == dtype and out.device.type == DEV
    torch.testing.assert_close(out.detach().cpu().double(), ref.detach(), atol=tol[0], rtol=tol[1])
    for name, x, r in zip("qkv", dev_in, ref_in):
        assert x.grad is not None and x.grad.dtype == dtype, name
        torch.testing.assert_close(
            x.grad.cpu().double(),
            r.grad,
            atol=tol[0] * 4,
            rtol=tol[1],
            msg=lambda m: f"grad {name}: {m}",
        )


def test_sdpa_causal_is_causal():
    """Changing a later key/value must not change earlier outputs."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 6, 8, generator=g) for _ in range(3))
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 4:] += 5
    v2[:, :, 4:] -= 5
    a = F.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), is_causal=True).cpu()
    b = F.scaled_dot_product_attention(q.to(DEV), k2.to(DEV), v2.to(DEV), is_causal=True).cpu()
    torch.testing.assert_close(a[:, :, :4], b[:, :, :4])
    assert (a[:, :, 4:] - b[:, :, 4:]).abs().max() > 1e-2
