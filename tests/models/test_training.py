"""The demo's models on privateuseone against CPU (fallback = error):
forward, every parameter's gradient, and 5 optimiser steps with AdamW in its
three implementations (for-loop, foreach, fused) and SGD with momentum."""

import copy
import functools

import pytest
import torch

import torch_ext  # noqa: F401
from torch_ext.coverage import device_calls
from torch_ext import demo
from torch_ext.demo import MLPClassifier, SmallCNN, TinyDecoder

from helpers import DEV

STEPS = 3
ATOL, RTOL = 2e-4, 2e-3
MODELS = {
    "mlp": (MLPClassifier, {}),
    "decoder_rms": (TinyDecoder, {"norm": "rms"}),
    "decoder_layer": (TinyDecoder, {"norm": "layer"}),
    "cnn": (SmallCNN, {}),
}


def make(name, seed=0):
    cls, kw = MODELS[name]
    torch.manual_seed(seed)
    return cls, cls(**kw)


def new_calls(before, prefix):
    after = device_calls()
    return {
        k: after[k] - before.get(k, 0)
        for k in after
        if k.startswith(prefix) and after[k] > before.get(k, 0)
    }


OPTIMIZERS = {
    "adamw_forloop": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, foreach=False),
    "adamw_foreach": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, foreach=True),
    "adamw_fused": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, fused=True),
    "sgd_momentum_forloop": lambda p: torch.optim.SGD(p, lr=5e-2, momentum=0.9, foreach=False),
    "sgd_nesterov_foreach": lambda p: torch.optim.SGD(
        p, lr=5e-2, momentum=0.9, nesterov=True, weight_decay=1e-3, foreach=True
    ),
}


def train(name, device, optimizer, steps=STEPS):
    cls, kw = MODELS[name]
    return demo.train(cls, device, steps, optimizer=OPTIMIZERS[optimizer], **kw)


@functools.lru_cache(maxsize=None)
def cpu_reference(name, optimizer):
    # The CPU reference always runs the plain for-loop implementation.
    ref_opt = optimizer.replace("_foreach", "_forloop").replace("_fused", "_forloop")
    if ref_opt not in OPTIMIZERS:
        ref_opt = optimizer
    return train(name, "cpu", ref_opt)


def assert_params_close(dev, cpu):
    assert dev.keys() == cpu.keys()
    for k in cpu:
        torch.testing.assert_close(dev[k], cpu[k], atol=ATOL, rtol=RTOL, msg=lambda m: f"{k}: {m}")


@pytest.mark.parametrize("name", MODELS)
def test_forward_backward(name):
    cls, cpu_model = make(name)
    dev_model = copy.deepcopy(cpu_model).to(DEV)
    inputs, targets = cls.batch(seed=3)
    cpu_loss = cls.loss(cpu_model, inputs, targets)
    dev_loss = cls.loss(dev_model, inputs.to(DEV), targets.to(DEV))
    assert dev_loss.device.type == DEV
    torch.testing.assert_close(dev_loss.detach().cpu(), cpu_loss.detach(), atol=1e-5, rtol=1e-5)
    # the logits too, not only their reduction
    torch.testing.assert_close(
        dev_model(inputs.to(DEV)).detach().cpu(), cpu_model(inputs).detach(), atol=1e-5, rtol=1e-4
    )
    cpu_loss.backward()
    dev_loss.backward()
    dev_params = dict(dev_model.named_parameters())
    for pname, p in cpu_model.named_parameters():
        g = dev_params[pname].grad
        assert g is not None and g.device.type == DEV, pname
        assert p.grad.abs().sum() > 0, pname  # each check has something to compare
        torch.testing.assert_close(
            g.cpu(), p.grad, atol=1e-5, rtol=1e-4, msg=lambda m: f"grad of {pname}: {m}"
        )


# Every optimizer implementation on the small MLP; on the larger models (seconds a step
# on the host driver's interpreter) each model with some of them, each implementation
# on at least one of them: an optimizer's step reads nothing of the model but its
# parameters and gradients, which the MLP's cases and these compare.
CASES = [("mlp", o) for o in OPTIMIZERS] + [
    ("decoder_rms", "adamw_fused"),
    ("decoder_rms", "sgd_nesterov_foreach"),
    ("decoder_layer", "adamw_foreach"),
    ("decoder_layer", "adamw_forloop"),
    ("cnn", "sgd_momentum_forloop"),
]


@pytest.mark.parametrize("name,optimizer", CASES)
def test_optimizer_steps_match_cpu(name, optimizer):
    before = device_calls()
    dev_losses, dev_params = train(name, DEV, optimizer)
    cpu_losses, cpu_params = cpu_reference(name, optimizer)
    torch.testing.assert_close(dev_losses, cpu_losses, atol=ATOL, rtol=RTOL)
    assert_params_close(dev_params, cpu_params)
    # the parameters moved: the comparison is not of untouched initial weights
    init = make(name)[1].state_dict()
    assert any((init[k] - dev_params[k]).abs().max() > 1e-3 for k in init)

    # Which implementation ran the step, from the aten ops called.
    fused = new_calls(before, "aten::_fused_adamw")
    foreach = new_calls(before, "aten::_foreach_")
    if optimizer == "adamw_fused":
        # one fused call per step (one param group, one device and dtype);
        # the fused path counts its steps with _foreach_add_, nothing else
        assert fused == {"aten::_fused_adamw_": STEPS}, fused
        assert set(foreach) <= {"aten::_foreach_add_.Scalar"}, foreach
    elif "foreach" in optimizer:
        assert foreach and not fused, (foreach, fused)
    else:
        assert not foreach and not fused, (foreach, fused)


def test_fused_adamw_is_our_kernel():
    """AdamW(fused=True) on the device runs torch_ext's multi-tensor Triton AdamW
    kernel: one launch per step for all parameters (not per parameter, not a
    decomposition, not the CPU), beside the launch that counts the steps. The
    profiler's `triton:<kernel>` ranges name launches on the Python path and those
    that launch plans replay from C++ alike."""
    from torch_ext.ops import _multi_tensor

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        losses, params = train("mlp", DEV, "adamw_fused", steps=2)
    events = sorted(prof.events(), key=lambda e: e.time_range.start)
    launched = [e.name[len("triton:") :] for e in events if e.name.startswith("triton:")]
    n_params = len(list(make("mlp")[1].parameters()))
    assert n_params <= _multi_tensor.slot_cap(5)  # one chunk
    multi = [n for n in launched if n.startswith("multi_tensor")]
    assert multi == ["multi_tensor_add", "multi_tensor_adam_body"] * 2, launched
    cpu_losses, cpu_params = train("mlp", "cpu", "adamw_forloop", steps=2)
    torch.testing.assert_close(losses, cpu_losses, atol=ATOL, rtol=RTOL)
    assert_params_close(params, cpu_params)
