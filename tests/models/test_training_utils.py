"""What training code around a model uses, on privateuseone (fallback = error):
activation checkpointing (torch.utils.checkpoint, both flavours, and Hugging Face's
gradient_checkpointing_enable) with dropout, so the RNG state of our device must be
forked and restored for the recomputation to draw the same masks; deterministic mode
(ops with deterministic kernels run and repeat bit for bit; ops whose kernels add floats
with atomics raise as CUDA's do); gradient clipping; eval + inference_mode; a state_dict
round trip through torch.save. (GradScaler with fp16 autocast: foreach/AMP ops, another
branch.)"""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch.utils.checkpoint import checkpoint

import torch_ext  # noqa: F401

from helpers import DEV


class Block(torch.nn.Module):
    def __init__(self, width=16, p=0.3):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, 2 * width)
        self.drop = torch.nn.Dropout(p)
        self.fc2 = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(self.drop(F.gelu(self.fc1(x))))


class Net(torch.nn.Module):
    def __init__(self, ckpt=None):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(3))
        self.head = torch.nn.Linear(16, 4)
        self.ckpt = ckpt  # None, or use_reentrant True / False

    def forward(self, x):
        for b in self.blocks:
            x = b(x) if self.ckpt is None else checkpoint(b, x, use_reentrant=self.ckpt)
        return self.head(x)


def _net_grads(ckpt):
    torch.manual_seed(0)
    net = Net(ckpt).to(DEV)
    x = torch.randn(8, 16, device=DEV, requires_grad=True)
    torch.privateuseone.manual_seed(123)
    net(x).square().mean().backward()
    return [x.grad.cpu()] + [p.grad.cpu() for p in net.parameters()]


@pytest.mark.parametrize("reentrant", [True, False], ids=["reentrant", "non_reentrant"])
def test_checkpoint_with_dropout_matches_plain_backward(reentrant):
    plain, ckpt = _net_grads(None), _net_grads(reentrant)
    for g, e in zip(ckpt, plain):
        torch.testing.assert_close(g, e, rtol=1e-6, atol=1e-7)
    # Without restoring the RNG state the recomputed masks would differ: check that
    # dropout really draws (two forwards differ) so the comparison above means something.
    torch.manual_seed(0)
    b = Block().to(DEV)
    x = torch.randn(8, 16, device=DEV)
    assert not torch.equal(b(x).cpu(), b(x).cpu())


def _gpt2_grads(ckpt):
    cfg = transformers.GPT2Config(
        vocab_size=61, n_positions=16, n_embd=32, n_layer=2, n_head=2, resid_pdrop=0.2,
        embd_pdrop=0.2, attn_pdrop=0.2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).to(DEV).train()
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ids = torch.randint(0, 61, (2, 10), generator=torch.Generator().manual_seed(1)).to(DEV)
    torch.privateuseone.manual_seed(7)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    return loss.item(), {n: p.grad.cpu() for n, p in model.named_parameters()}


def test_hf_gradient_checkpointing_with_dropout():
    (l0, g0), (l1, g1) = _gpt2_grads(False), _gpt2_grads(True)
    assert l0 == pytest.approx(l1, rel=1e-6)
    assert g0.keys() == g1.keys()
    for n in g0:
        torch.testing.assert_close(g1[n], g0[n], rtol=1e-5, atol=1e-6, msg=n)


@pytest.fixture
def deterministic():
    prev, warn = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(prev, warn_only=warn)


def _deterministic_step():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(20, 8).to(DEV)
    ln = torch.nn.LayerNorm(8).to(DEV)
    lin = torch.nn.Linear(8, 5).to(DEV)
    ids = torch.tensor([[1, 3, 3, 7], [7, 1, 0, 19]], device=DEV)
    h = ln(emb(ids))
    logits = lin(h).cumsum(1)
    loss = F.cross_entropy(logits.flatten(0, 1), ids.flatten() % 5)
    idx = torch.tensor([0, 2, 0, 1], device=DEV)
    extra = torch.zeros(3, 8, device=DEV).index_add(0, idx, h[0])
    extra = extra.scatter_add(0, idx[:, None].expand(4, 8), h[1])
    loss = loss + extra.square().sum() + h.sort(dim=-1).values.sum()
    loss.backward()
    return [loss.detach().cpu()] + [p.grad.cpu() for p in (emb.weight, ln.weight, lin.weight)]


def test_deterministic_mode_runs_and_repeats(deterministic):
    a, b = _deterministic_step(), _deterministic_step()
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def _interp(x):
    # (linear/bilinear/trilinear take torch's index_put decomposition off the CPU
    # under deterministic mode; bicubic reaches our kernel)
    F.interpolate(x, scale_factor=2, mode="bicubic").sum().backward()


def _grid(x):
    grid = torch.rand(1, 3, 3, 2, device=DEV) * 2 - 1
    F.grid_sample(x, grid, align_corners=False).sum().backward()


def _reflect(x):
    F.pad(x, (1, 1, 1, 1), mode="reflect").sum().backward()


def _avg3d(x):
    F.avg_pool3d(x.unsqueeze(0), 2, stride=1).sum().backward()


NONDETERMINISTIC = {
    "upsample_bicubic2d_backward": _interp,
    "grid_sampler_2d_backward": _grid,
    "reflection_pad2d_backward": _reflect,
    "avg_pool3d_backward": _avg3d,
    "_bincount": lambda x: torch.bincount(
        torch.tensor([0, 1, 1], device=DEV), weights=x.detach().flatten()[:3]
    ),
    "put_": lambda x: x.detach().clone().put_(torch.tensor([0, 0], device=DEV), x[0, 0, 0, :2]),
}


@pytest.mark.parametrize("name", NONDETERMINISTIC)
def test_deterministic_mode_refuses_atomic_float_sums(deterministic, name):
    """As CUDA: a RuntimeError naming the op and the switch; with warn_only a warning."""
    x = torch.randn(1, 2, 4, 4, device=DEV, requires_grad=True)
    with pytest.raises(RuntimeError, match=rf"{name}\w* does not have a deterministic"):
        NONDETERMINISTIC[name](x)
    torch.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match="use_deterministic_algorithms"):
        NONDETERMINISTIC[name](x)
    torch.use_deterministic_algorithms(False)
    NONDETERMINISTIC[name](x)  # and runs when the mode is off


def test_clip_grad_norm_and_value():
    torch.manual_seed(0)
    ref = Net()
    dev = Net().to(DEV)
    dev.load_state_dict(ref.state_dict())
    x = torch.randn(8, 16)
    ref.eval(), dev.eval()
    ref(x).square().sum().backward()
    dev(x.to(DEV)).square().sum().backward()
    for norm_type in (2.0, float("inf")):
        for m in (ref, dev):
            for p in m.parameters():
                p.grad.mul_(100.0)  # norms well above max_norm
        n_ref = torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5, norm_type, foreach=False)
        n_dev = torch.nn.utils.clip_grad_norm_(dev.parameters(), 0.5, norm_type, foreach=False)
        assert n_dev.device.type == "privateuseone"
        torch.testing.assert_close(n_dev.cpu(), n_ref, rtol=1e-5, atol=1e-6)
        for p, q in zip(dev.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6)
        total = torch.linalg.vector_norm(
            torch.stack([p.grad.norm(norm_type) for p in dev.parameters()]), norm_type
        )
        assert total.item() == pytest.approx(0.5, rel=1e-4)
    torch.nn.utils.clip_grad_value_(ref.parameters(), 0.01, foreach=False)
    torch.nn.utils.clip_grad_value_(dev.parameters(), 0.01, foreach=False)
    for p, q in zip(dev.parameters(), ref.parameters()):
        assert p.grad.abs().max().item() <= 0.01
        torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-7)


def test_eval_inference_mode_matches_cpu():
    torch.manual_seed(0)
    ref = Net().eval()
    dev = Net().to(DEV).eval()
    dev.load_state_dict(ref.state_dict())
    x = torch.randn(8, 16)
    with torch.inference_mode():
        out, exp = dev(x.to(DEV)), ref(x)
        again = dev(x.to(DEV))  # dropout is off in eval: the same output twice
    assert out.is_inference() and out.device.type == "privateuseone"
    assert not out.requires_grad
    torch.testing.assert_close(out.cpu(), exp, rtol=1e-5, atol=1e-6)
    assert torch.equal(out.cpu(), again.cpu())
    with pytest.raises(RuntimeError, match="[Ii]nference tensor"):
        out.requires_grad_(True).sum().backward()


@pytest.mark.parametrize("map_location", ["privateuseone", "cpu", None])
def test_state_dict_round_trip(map_location):
    torch.manual_seed(0)
    net = Net().to(DEV)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    net(torch.randn(4, 16, device=DEV)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    loaded = torch.load(buf, map_location=map_location, weights_only=True)
    want = "cpu" if map_location == "cpu" else "privateuseone"
    for k, v in net.state_dict().items():
        assert loaded["model"][k].device.type == want
        assert torch.equal(loaded["model"][k].cpu(), v.cpu()), k
    exp_avg = loaded["opt"]["state"][0]["exp_avg"]
    assert exp_avg.device.type == want
    assert torch.equal(exp_avg.cpu(), opt.state[net.blocks[0].fc1.weight]["exp_avg"].cpu())
    # A fresh model on the device takes the loaded state and computes the same.
    other = Net().to(DEV)
    other.load_state_dict(loaded["model"])
    x = torch.randn(4, 16, device=DEV)
    net.eval(), other.eval()
    assert torch.equal(other(x).cpu(), net(x).cpu())
