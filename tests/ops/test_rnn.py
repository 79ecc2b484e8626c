"""ops/rnn.py: the fused LSTM and GRU cells against the CPU (its composite cells), forward
and backward, through nn.LSTM / nn.GRU / the cell modules, with and without biases,
float32 and bfloat16; every op native (no CPU fallback)."""

import copy

import pytest
import torch
from torch import nn


DEVICE = "privateuseone"


def _flat(out):
    """The tensors of an RNN's output: (out, h) or (out, (h, c)), or one tensor."""
    items = out if isinstance(out, tuple) else (out,)
    return [t for item in items for t in (item if isinstance(item, tuple) else (item,))]


def _compare(module, inputs, dtype=torch.float32, atol=1e-5, rtol=1e-4):
    torch.manual_seed(0)
    cpu = module.double()
    dev = copy.deepcopy(module).to(DEVICE, dtype)
    xs = [x.double().requires_grad_() for x in inputs]
    ds = [x.to(DEVICE, dtype).requires_grad_() for x in inputs]
    want, got = cpu(*xs), dev(*ds)
    want, got = _flat(want), _flat(got)
    weights = [torch.randn(t.shape, dtype=torch.float64) for t in want]
    sum(t.mul(w).sum() for t, w in zip(want, weights)).backward()
    sum(t.double().mul(w.to(DEVICE)).sum() for t, w in zip(got, weights)).backward()
    for w, g in zip(want, got):
        torch.testing.assert_close(g.detach().cpu().double(), w.detach(), atol=atol, rtol=rtol)
    for x, d in zip(xs, ds):
        torch.testing.assert_close(d.grad.cpu().double(), x.grad, atol=atol, rtol=rtol)
    for (name, p), q in zip(cpu.named_parameters(), dev.parameters()):
        torch.testing.assert_close(q.grad.cpu().double(), p.grad, atol=atol, rtol=rtol, msg=name)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_rnn_layers_match_cpu(kind, bias):
    torch.manual_seed(1)
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    m = cls(5, 7, num_layers=2, bias=bias, batch_first=True, bidirectional=True)
    x = torch.randn(3, 4, 5)
    _compare(m, [x])


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_cells_with_state_match_cpu(kind):
    torch.manual_seed(2)
    if kind == "lstm":
        cell = nn.LSTMCell(6, 9)
        inputs = [torch.randn(4, 6), torch.randn(4, 9), torch.randn(4, 9)]

        class Wrap(nn.Module):
            def __init__(self):
                super().__init__()
                self.cell = cell

            def forward(self, x, h, c):
                return self.cell(x, (h, c))

        _compare(Wrap(), inputs)
    else:
        _compare(nn.GRUCell(6, 9), [torch.randn(4, 6), torch.randn(4, 9)])


def test_lstm_bfloat16_and_only_cell_state_gradient():
    torch.manual_seed(3)
    _compare(nn.LSTM(8, 16), [torch.randn(5, 2, 8)], dtype=torch.bfloat16, atol=3e-2, rtol=3e-2)
    # a loss on the last cell state alone: the backward gets no hy gradient
    m = nn.LSTM(4, 6).to(DEVICE)
    x = torch.randn(3, 2, 4, device=DEVICE, requires_grad=True)
    _, (h, c) = m(x)
    c.sum().backward()
    ref = nn.LSTM(4, 6)
    ref.load_state_dict({k: v.cpu() for k, v in m.state_dict().items()})
    xr = x.detach().cpu().requires_grad_()
    ref(xr)[1][1].sum().backward()
    torch.testing.assert_close(x.grad.cpu(), xr.grad, atol=1e-5, rtol=1e-4)


def test_double_backward_takes_the_differentiable_cell():
    m = nn.GRUCell(3, 4).to(DEVICE)
    x = torch.randn(2, 3, device=DEVICE, requires_grad=True)
    (g,) = torch.autograd.grad(m(x).pow(2).sum(), x, create_graph=True)
    g.sum().backward()
    ref = nn.GRUCell(3, 4)
    ref.load_state_dict({k: v.cpu() for k, v in m.state_dict().items()})
    xr = x.detach().cpu().requires_grad_()
    (gr,) = torch.autograd.grad(ref(xr).pow(2).sum(), xr, create_graph=True)
    gr.sum().backward()
    torch.testing.assert_close(x.grad.cpu(), xr.grad, atol=1e-5, rtol=1e-4)


def test_bad_shapes_name_the_problem():
    g = torch.randn(2, 8, device=DEVICE)
    with pytest.raises(RuntimeError, match="expects a state of shape"):
        torch.ops.aten._thnn_fused_lstm_cell(g, g, torch.randn(2, 3, device=DEVICE))
    with pytest.raises(RuntimeError, match="gates of one shape"):
        torch.ops.aten._thnn_fused_gru_cell(g, g, torch.randn(2, 3, device=DEVICE))
