"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the optim
family: fused and foreach optimiser steps, clip_grad_norm_, GradScaler."""

import pytest
import torch

from torch_ext.ops import _launch, _multi_tensor

from helpers import DEV, rand


F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def test_fused_adamw():
    torch.manual_seed(0)
    params = [rand((5, 3), F32), rand((7,), F32)]
    grads_ = [rand((5, 3), F32), rand((7,), F32)]
    results = {}
    for dev in ("cpu", DEV):
        ps = [p.clone().to(dev) for p in params]
        gs = [g.clone().to(dev) for g in grads_]
        ea = [torch.zeros_like(p) for p in ps]
        eas = [torch.zeros_like(p) for p in ps]
        mx = []  # max_exp_avg_sqs: amsgrad only
        steps = [torch.tensor(0.0, device=dev) for _ in ps]
        for _ in range(3):
            for s in steps:
                s += 1
            torch._fused_adamw_(
                ps,
                gs,
                ea,
                eas,
                mx,
                steps,
                lr=1e-2,
                beta1=0.9,
                beta2=0.999,
                weight_decay=0.1,
                eps=1e-8,
                amsgrad=False,
                maximize=False,
            )
        lr = torch.tensor(1e-2, device=dev)
        torch._fused_adamw_(
            ps,
            gs,
            ea,
            eas,
            mx,
            steps,
            lr=lr,
            beta1=0.9,
            beta2=0.999,
            weight_decay=0.1,
            eps=1e-8,
            amsgrad=False,
            maximize=False,
        )
        results[dev] = [t.cpu() for t in ps + ea + eas]
    for a, b in zip(results[DEV], results["cpu"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # the optimiser front end
    for fused in (True, False):
        w = torch.nn.Parameter(params[0].clone().to(DEV))
        opt = torch.optim.AdamW([w], lr=1e-2, fused=fused)
        w.grad = grads_[0].clone().to(DEV)
        opt.step()
        wc = torch.nn.Parameter(params[0].clone())
        optc = torch.optim.AdamW([wc], lr=1e-2)
        wc.grad = grads_[0].clone()
        optc.step()
        torch.testing.assert_close(w.detach().cpu(), wc.detach(), rtol=1e-5, atol=1e-6)


# ---- torch.optim's foreach and fused paths, clip_grad_norm_, GradScaler ----------

SHAPES = [(6, 5), (5,), (3, 2, 2), (1,), (7,)]

OPTIMIZERS = {
    "adamw-foreach": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    "adamw-fused": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, fused=True),
    "adamw-capturable": lambda ps: torch.optim.AdamW(
        ps, lr=1e-2, weight_decay=0.1, capturable=True, foreach=True
    ),
    "adam-amsgrad": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=0.1),
    "adam-amsgrad-fused": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True, fused=True),
    "adam-maximize": lambda ps: torch.optim.Adam(ps, lr=1e-2, maximize=True),
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd-momentum": lambda ps: torch.optim.SGD(
        ps, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.1
    ),
    "sgd-nesterov": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "sgd-fused": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, fused=True),
    # the other optimisers' foreach paths reach more overloads (addcdiv.ScalarList,
    # maximum, pow.ScalarAndTensor, sign, ...)
    "rmsprop": lambda ps: torch.optim.RMSprop(ps, lr=1e-2, momentum=0.9, centered=True),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=1e-2, weight_decay=0.1),
    "adamax": lambda ps: torch.optim.Adamax(ps, lr=1e-2, weight_decay=0.1),
    "nadam": lambda ps: torch.optim.NAdam(ps, lr=1e-2, decoupled_weight_decay=True),
    "radam": lambda ps: torch.optim.RAdam(ps, lr=1e-2, weight_decay=0.1),
    "rprop": lambda ps: torch.optim.Rprop(ps, lr=1e-2),
}


def _run_optimizer(make, dev, steps=3):
    torch.manual_seed(0)
    ps = [torch.nn.Parameter(torch.randn(s).to(dev)) for s in SHAPES]
    opt = make(ps)
    for k in range(steps):
        torch.manual_seed(k + 1)
        for p in ps:
            p.grad = torch.randn(p.shape).to(dev)
        opt.step()
    return [p.detach().cpu() for p in ps]


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_step_matches_cpu(name):
    make = OPTIMIZERS[name]
    res = _run_optimizer(make, DEV)
    # the CPU reference of the capturable path (state steps on the device) is the plain one
    ref = _run_optimizer(OPTIMIZERS[name.replace("capturable", "foreach")], "cpu")
    for a, b in zip(res, ref):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
def test_clip_grad_norm(norm_type):
    out = {}
    for dev in ("cpu", DEV):
        torch.manual_seed(0)
        ps = [torch.nn.Parameter(torch.randn(s).to(dev)) for s in SHAPES]
        for p in ps:
            p.grad = (torch.randn(p.shape) * 3).to(dev)
        total = torch.nn.utils.clip_grad_norm_(ps, 1.0, norm_type=norm_type, foreach=True)
        out[dev] = [total.cpu()] + [p.grad.cpu() for p in ps]
    for a, b in zip(out[DEV], out["cpu"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def _scaler_run(dev, fused):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    model = model.to(dev)
    if fused:  # GradScaler hands grad_scale and found_inf to the fused kernel
        opt = torch.optim.AdamW(model.parameters(), lr=0.01, fused=True)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(dev, init_scale=1024.0, growth_interval=2)
    x, y = torch.randn(16, 4).to(dev), torch.randn(16, 2).to(dev)
    trace = []
    for step in range(4):
        opt.zero_grad()
        with torch.autocast(dev, dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        if step == 1:  # an overflowing gradient: the step is skipped, the scale halved
            next(model.parameters()).grad[0, 0] = float("inf")
        before = [p.detach().cpu().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        after = [p.detach().cpu().clone() for p in model.parameters()]
        skipped = all(torch.equal(a, b) for a, b in zip(before, after))
        trace.append((scaler.get_scale(), skipped, after))
    return trace


@pytest.mark.parametrize("fused", [False, True])
def test_grad_scaler_fp16(fused):
    res, ref = _scaler_run(DEV, fused), _scaler_run("cpu", fused)
    assert [t[:2] for t in res] == [t[:2] for t in ref]
    assert res[1][1] and res[1][0] == res[0][0] / 2  # skipped, scale halved
    assert not res[2][1]
    for (_, _, a), (_, _, b) in zip(res, ref):
        for x, y in zip(a, b):
            torch.testing.assert_close(x, y, rtol=2e-3, atol=2e-3)


def _launches_per_step(make, n_params):
    ps = [torch.nn.Parameter(torch.randn(3).to(DEV)) for _ in range(n_params)]
    opt = make(ps)
    for p in ps:
        p.grad = torch.randn(3).to(DEV)
    opt.step()  # the first step creates the state
    before = _launch.launches()
    opt.step()
    return _launch.launches() - before


def _chunks(n, *depths):
    """Launches of foreach ops over n tensors taking `depths` lists each (torch's
    CUDA kernels launch as often for small tensors: the same tensors per launch)."""
    return sum(-(-n // _multi_tensor.slot_cap(d)) for d in depths)


def test_launches_per_step_scale_with_chunks():
    n = _multi_tensor.slot_cap(1) + 1  # every op takes at least two chunks
    # AdamW (state steps on the CPU): mul_, lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_
    assert _launches_per_step(OPTIMIZERS["adamw-foreach"], n) <= _chunks(n, 1, 2, 1, 3, 2, 1, 1, 3)
    # fused: the steps' increment on the device, then one kernel (p, g, m, v, steps)
    assert _launches_per_step(OPTIMIZERS["adamw-fused"], n) == _chunks(n, 1, 5)
    assert _launches_per_step(OPTIMIZERS["sgd-fused"], n) == _chunks(n, 3)
    # SGD: weight decay (functional add), momentum mul_, momentum add_, update add_
    assert _launches_per_step(OPTIMIZERS["sgd-momentum"], n) <= _chunks(n, 3, 1, 2, 2)


def test_foreach_mixed_dtypes_and_devices():
    xs = [torch.randn(4), torch.randn(3, dtype=torch.float64), torch.randn(2).half()]
    res = torch._foreach_mul([x.to(DEV) for x in xs], 3.0)
    for r, x in zip(res, xs):
        assert r.dtype == x.dtype and r.device.type == DEV
        torch.testing.assert_close(r.cpu(), x * 3.0)
    with pytest.raises(RuntimeError, match="one device"):
        torch._foreach_add_([torch.ones(2, device=DEV), torch.ones(2)], 1.0)
    with pytest.raises(RuntimeError, match="same number of tensors"):
        torch._foreach_add_([torch.ones(2, device=DEV)] * 2, [torch.ones(2, device=DEV)])
