"""A small transformer and the single-process reference the parallel runs
must equal."""

import copy

import torch
from torch import nn

STEPS = 5
GLOBAL_BATCH = 4
SEQ = 6
VOCAB = 11


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.block = nn.TransformerEncoderLayer(
            16, 2, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.head = nn.Linear(16, VOCAB)

    def forward(self, x):
        return self.head(self.block(self.embed(x)))


def make_model():
    torch.manual_seed(0)
    return Tiny()


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randint(0, VOCAB, (GLOBAL_BATCH, SEQ), generator=g)
    y = torch.randint(0, VOCAB, (GLOBAL_BATCH, SEQ), generator=g)
    return x, y


def loss_fn(out, y):
    return nn.functional.cross_entropy(out.reshape(-1, VOCAB), y.reshape(-1))


def reference(device, steps=STEPS):
    """The model after `steps` SGD steps on the whole global batch."""
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model(x.to(device)), y.to(device)).backward()
        opt.step()
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def shard(t, rank, ws):
    n = t.shape[0] // ws
    return t[rank * n : (rank + 1) * n]


def assert_close(got, want, what, atol=1e-5, rtol=1e-4):
    for k, v in want.items():
        torch.testing.assert_close(got[k].cpu(), v, atol=atol, rtol=rtol, msg=f"{what}: {k}")


__all__ = ["copy", "make_model", "batch", "loss_fn", "reference", "shard", "assert_close"]
