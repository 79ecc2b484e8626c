"""Kernel-level tests (Triton wrappers called directly, on CPU tensors under
Triton's interpreter by default; tests/ops/conftest.py) of the optim family
(fused AdamW)."""

import pytest

import torch

from torch_ext.ops import optim

from helpers import randn
from helpers import assert_kernel_close as assert_close


@pytest.mark.parametrize("amsgrad,maximize", [(False, False), (True, True)])
def test_fused_adamw(amsgrad, maximize, device):
    ps = [randn((10,), torch.float32, device), randn((3, 4), torch.float32, device)]
    gs = [randn(p.shape, torch.float32, device) for p in ps]
    ref = [p.cpu().clone() for p in ps]
    state = [[torch.zeros(p.shape).to(device) for p in ps] for _ in range(3)]
    rstate = [[torch.zeros(p.shape) for p in ps] for _ in range(3)]
    rsteps = [torch.zeros(()) for _ in ps]
    for _ in range(3):
        for s in rsteps:
            s += 1
        torch._fused_adamw_(
            ref,
            [g.cpu() for g in gs],
            rstate[0],
            rstate[1],
            rstate[2] if amsgrad else [],
            rsteps,
            lr=0.01,
            beta1=0.9,
            beta2=0.99,
            weight_decay=0.1,
            eps=1e-8,
            amsgrad=amsgrad,
            maximize=maximize,
        )
        steps = [torch.full((), float(rsteps[0])).to(device) for _ in ps]
        optim.fused_adamw_(
            ps,
            gs,
            state[0],
            state[1],
            state[2],
            steps,
            0.01,
            0.9,
            0.99,
            0.1,
            1e-8,
            amsgrad,
            maximize,
        )
    for p, r in zip(ps, ref):
        assert_close(p, r, atol=1e-6, rtol=1e-5)
