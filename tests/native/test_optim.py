"""Dispatcher-level tests (torch.* on privateuseone against CPU) of the optim
family (fused AdamW)."""

import torch

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
