"""python -m torch_ext.demo: real models on privateuseone, checked against CPU.

Trains a 2-layer transformer decoder, a small CNN (convolutions, batch norm,
pooling) and an MLP classifier for a few AdamW steps on the device and on CPU
from the same initial weights, compares losses and parameters, and reports
which aten ops ran natively and which fell back.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

DEV = "privateuseone"


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class GatedMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, dim, heads, norm):
        super().__init__()
        make_norm = (
            (lambda: nn.RMSNorm(dim, eps=1e-6)) if norm == "rms" else (lambda: nn.LayerNorm(dim))
        )
        self.norm1, self.norm2 = make_norm(), make_norm()
        self.attn = CausalSelfAttention(dim, heads)
        self.mlp = GatedMLP(dim, 4 * dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyDecoder(nn.Module):
    """Token embedding, causal self-attention, RMS/layer norm, gated MLP."""

    def __init__(self, vocab=64, dim=32, heads=4, layers=2, norm="rms"):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, norm) for _ in range(layers))
        self.norm = nn.RMSNorm(dim, eps=1e-6) if norm == "rms" else nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))

    @staticmethod
    def batch(seed=0, batch=4, seq=16, vocab=64):
        g = torch.Generator().manual_seed(seed)
        tokens = torch.randint(0, vocab, (batch, seq + 1), generator=g)
        return tokens[:, :-1], tokens[:, 1:]

    @staticmethod
    def loss(model, inputs, targets):
        logits = model(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class MLPClassifier(nn.Module):
    def __init__(self, features=20, hidden=64, classes=5):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden),
            nn.GELU(),
            nn.LayerNorm(hidden),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)

    @staticmethod
    def batch(seed=0, batch=32, features=20, classes=5):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(batch, features, generator=g), torch.randint(
            0, classes, (batch,), generator=g
        )

    @staticmethod
    def loss(model, inputs, targets):
        return F.cross_entropy(model(inputs), targets)


class SmallCNN(nn.Module):
    """Conv + batch norm + ReLU + max pool, a grouped conv, average pooling. The
    convolutions before batch norm have no bias (as in ResNets): batch norm
    cancels a bias's gradient, and AdamW would scale that rounding noise up
    to full steps, on the CPU as on any device."""

    def __init__(self, channels=3, width=8, classes=5):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1, groups=2, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.AvgPool2d(2),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(2 * width, classes),
        )

    def forward(self, x):
        return self.net(x)

    @staticmethod
    def batch(seed=0, batch=8, channels=3, size=16, classes=5):
        g = torch.Generator().manual_seed(seed)
        return (
            torch.randn(batch, channels, size, size, generator=g),
            torch.randint(0, classes, (batch,), generator=g),
        )

    @staticmethod
    def loss(model, inputs, targets):
        return F.cross_entropy(model(inputs), targets)


class OpCounter(TorchDispatchMode):
    """Counts the aten overloads called on device tensors."""

    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        leaves = torch.utils._pytree.tree_leaves((args, kwargs or {}))
        if any(isinstance(t, torch.Tensor) and t.device.type == DEV for t in leaves):
            self.ops[str(func.name())] += 1
        return func(*args, **(kwargs or {}))


def adamw(params):
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.01)


def train(model_cls, device, steps=5, seed=0, optimizer=adamw, **kw):
    """Losses and final parameters of `steps` optimiser steps from a fixed init;
    `optimizer` makes the optimiser from the parameters."""
    torch.manual_seed(seed)
    model = model_cls(**kw)
    model = model.to(device)
    opt = optimizer(model.parameters())
    losses = []
    for step in range(steps):
        inputs, targets = model_cls.batch(seed=step)
        loss = model_cls.loss(model, inputs.to(device), targets.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}


def compare(model_cls, steps=5, atol=2e-4, rtol=2e-3, **kw):
    cpu_losses, cpu_params = train(model_cls, "cpu", steps, **kw)
    dev_losses, dev_params = train(model_cls, DEV, steps, **kw)
    worst = max(abs(a - b) for a, b in zip(cpu_losses, dev_losses))
    param_err = max((dev_params[k] - cpu_params[k]).abs().max().item() for k in cpu_params)
    ok = all(math.isclose(a, b, rel_tol=rtol, abs_tol=atol) for a, b in zip(cpu_losses, dev_losses))
    ok = ok and all(
        torch.allclose(dev_params[k], cpu_params[k], atol=atol, rtol=rtol) for k in cpu_params
    )
    return ok, cpu_losses, dev_losses, worst, param_err


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m torch_ext.demo", description=__doc__)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args(argv)

    import torch_ext

    print(
        f"torch {torch.__version__}, torch_ext driver: {torch_ext.driver_name()}, "
        f"device: {torch.privateuseone.get_device_name()}"
    )
    # The comparison is with float32 on the CPU: no TF32 convolutions (PyTorch's default on
    # NVIDIA GPUs, which torch_ext honours on the cuda driver).
    torch.backends.cudnn.allow_tf32 = False
    torch_ext.reset_fallback_stats()
    counter = OpCounter()
    all_ok = True
    for cls, kw in ((TinyDecoder, {}), (SmallCNN, {}), (MLPClassifier, {})):
        start = time.perf_counter()
        with counter:
            ok, cpu_l, dev_l, worst, perr = compare(cls, steps=args.steps, **kw)
        all_ok &= ok
        print(
            f"\n{cls.__name__}: {args.steps} AdamW steps in {time.perf_counter() - start:.1f}s "
            f"-> {'MATCHES CPU' if ok else 'DIFFERS FROM CPU'}"
        )
        print("  loss cpu:    " + " ".join(f"{v:.5f}" for v in cpu_l))
        print("  loss device: " + " ".join(f"{v:.5f}" for v in dev_l))
        print(f"  max |loss diff| {worst:.2e}, max |param diff| {perr:.2e}")

    fell_back = torch_ext.fallback_stats()
    native = {op: n for op, n in counter.ops.items() if op not in fell_back}
    print(
        f"\naten ops called on {DEV}: {len(counter.ops)} distinct, "
        f"{sum(counter.ops.values())} calls"
    )
    print(f"  native (ours): {len(native)} ops, {sum(native.values())} calls")
    print(
        f"  fell back to CPU: {len(fell_back)} ops, {sum(fell_back.values())} calls"
        + (": " + ", ".join(f"{k} x{v}" for k, v in sorted(fell_back.items())) if fell_back else "")
    )
    print("  native ops: " + ", ".join(sorted(native)))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
