"""Module.to() and `.data` swaps keep Parameter identity, as on CUDA: tied weights stay tied,
an optimizer built before the move keeps training the model's parameters."""

import io

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_ext  # noqa: F401

from helpers import DEV


class TiedLM(nn.Module):
    """An embedding whose weight is also the output projection's (GPT-2, BERT, Qwen2 style)."""

    def __init__(self, vocab=11, dim=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mid = nn.Linear(dim, dim)
        self.bn = nn.BatchNorm1d(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, tokens):
        h = torch.tanh(self.mid(self.emb(tokens)))
        h = self.bn(h.transpose(1, 2)).transpose(1, 2)
        return self.head(h)


def make(seed=0):
    torch.manual_seed(seed)
    return TiedLM()


def test_tied_parameters_survive_to_and_back():
    m = make()
    params = list(m.parameters())
    m.to(DEV)
    assert m.head.weight is m.emb.weight
    assert m.emb.weight.device.type == DEV
    assert [p is q for p, q in zip(params, m.parameters())] == [True] * len(params)
    m.to("cpu")
    assert m.head.weight is m.emb.weight
    assert m.emb.weight.device.type == "cpu"
    assert all(p is q for p, q in zip(params, m.parameters()))


@pytest.mark.parametrize("cast", ["half", "bfloat16", "double"])
def test_dtype_casts_after_moving_keep_identity(cast):
    m = make().to(DEV)
    w = m.emb.weight
    getattr(m, cast)()
    assert m.emb.weight is w and m.head.weight is w
    assert w.dtype == getattr(torch, {"half": "float16"}.get(cast, cast))
    assert w.device.type == DEV


def test_buffers_move_and_stay_buffers():
    m = make()
    m.to(DEV)
    names = {n for n, _ in m.named_buffers()}
    assert names == {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}
    assert all(b.device.type == DEV for b in m.buffers())
    m.train()(torch.randint(0, 11, (2, 5), device=DEV))
    assert m.bn.num_batches_tracked.item() == 1
    assert m.bn.running_mean.abs().sum().item() > 0


def train(m, device, opt_before_move, steps=3):
    torch.manual_seed(1)
    batches = [torch.randint(0, 11, (3, 6)) for _ in range(steps)]
    if opt_before_move:
        opt = torch.optim.AdamW(m.parameters(), lr=0.05)
        m.to(device)
    else:
        m.to(device)
        opt = torch.optim.AdamW(m.parameters(), lr=0.05)
    losses = []
    for tokens in batches:
        tokens = tokens.to(device)
        loss = F.cross_entropy(m(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().cpu() for k, v in m.state_dict().items()}


@pytest.mark.parametrize("opt_before_move", [False, True])
def test_tied_model_trains_like_cpu(opt_before_move):
    ref_losses, ref_state = train(make(), "cpu", opt_before_move)
    losses, state = train(make(), DEV, opt_before_move)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), rtol=1e-4, atol=1e-5)
    for k in ref_state:
        torch.testing.assert_close(state[k], ref_state[k], rtol=1e-4, atol=1e-5, msg=k)
    # The shared weight took both gradients: untied, it would differ from the embedding alone.
    assert torch.equal(state["emb.weight"], state["head.weight"])


def test_data_assignment_both_directions():
    p = nn.Parameter(torch.randn(3, 3))
    on_dev = torch.randn(3, 3).to(DEV)
    p.data = on_dev
    assert p.device.type == DEV and isinstance(p, nn.Parameter)
    torch.testing.assert_close(p.detach().cpu(), on_dev.cpu())
    back = torch.randn(3, 3)
    p.data = back
    assert p.device.type == "cpu"
    torch.testing.assert_close(p.detach(), back)
    # Dtype changes too, as on CUDA.
    p.data = torch.ones(2, dtype=torch.float16, device=DEV)
    assert p.dtype == torch.float16 and p.shape == (2,)


def test_swap_module_params_on_conversion():
    prev = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        m = make()
        w = m.emb.weight
        m.to(DEV)
        # Swapping keeps the Python object and moves its contents; ties hold.
        assert m.emb.weight is w and m.head.weight is w
        assert w.device.type == DEV
        m.to("cpu")
        assert m.emb.weight is w and w.device.type == "cpu"
    finally:
        torch.__future__.set_swap_module_params_on_conversion(prev)


def test_state_dict_and_save_load_of_a_moved_tied_model():
    m = make().to(DEV)
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf)
    assert sd["emb.weight"].device.type == DEV
    fresh = make(seed=5).to(DEV)
    fresh.load_state_dict(sd)
    assert fresh.head.weight is fresh.emb.weight
    torch.testing.assert_close(fresh.emb.weight.cpu(), m.emb.weight.cpu())
    # A whole-module save keeps the tie too.
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert loaded.head.weight is loaded.emb.weight
    assert loaded.emb.weight.device.type == DEV


def test_incompatible_types_still_refused():
    """The kernel widens c10's rule to our device only; sparse stays apart from dense."""
    dense = torch.randn(2, 2).to(DEV)
    sparse = torch.eye(2).to_sparse()
    assert torch._has_compatible_shallow_copy_type(dense, torch.randn(2, 2))
    assert not torch._has_compatible_shallow_copy_type(dense, sparse)
