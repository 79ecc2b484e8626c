"""Fused LSTM and GRU cells: what nn.LSTM, nn.GRU, nn.LSTMCell and nn.GRUCell call on an
accelerator between the two gate matrix products of a step (aten's lstm_cell/gru_cell
take them for privateuseone as for CUDA). One pointwise launch a cell forward (the gate
activations saved in a workspace) and one backward; the bias gradients are batch sums.

LSTM: gates = input_gates + hidden_gates (+ biases), chunks i, f, g, o of H columns;
cy = sigmoid(f) * cx + sigmoid(i) * tanh(g), hy = sigmoid(o) * tanh(cy); the workspace
holds the activated (i, f, g, o). GRU: chunks r, z, n of H; r and z are sigmoids of the
summed gates, n = tanh(in + r * hn) with hn = the hidden n-gate (+ its bias);
hy = n + z * (hx - n); the workspace holds (r, z, n, hx, hn), as CUDA's."""

import torch
import triton
import triton.language as tl

from ._common import tl_float_acc
from ._declare import kernel
from ._launch import cdiv, launch

_BLOCK = 1024


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _lanes(total, H, BLOCK: tl.constexpr):
    """This program's (batch row, hidden column) elements e of the (B, H) state, in bounds m."""
    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    row = e // H
    return e, e < total, row, e - row * H


@triton.jit
def _gate(ig, hg, ib, hb, row, col, G, m, HAS_BIAS: tl.constexpr, ACC: tl.constexpr):
    """input_gates + hidden_gates (+ both biases) at (row, col) of the (B, G) gates."""
    v = tl.load(ig + row * G + col, mask=m, other=0).to(ACC)
    v += tl.load(hg + row * G + col, mask=m, other=0).to(ACC)
    if HAS_BIAS:
        v += tl.load(ib + col, mask=m, other=0).to(ACC) + tl.load(hb + col, mask=m, other=0).to(ACC)
    return v


@triton.jit
def _lstm_fwd_kernel(ig, hg, ib, hb, cx, hy, cy, ws, total, H, HAS_BIAS: tl.constexpr,
                     ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    e, m, row, col = _lanes(total, H, BLOCK)
    G = 4 * H
    i = _sigmoid(_gate(ig, hg, ib, hb, row, col, G, m, HAS_BIAS, ACC))
    f = _sigmoid(_gate(ig, hg, ib, hb, row, col + H, G, m, HAS_BIAS, ACC))
    g = _tanh(_gate(ig, hg, ib, hb, row, col + 2 * H, G, m, HAS_BIAS, ACC))
    o = _sigmoid(_gate(ig, hg, ib, hb, row, col + 3 * H, G, m, HAS_BIAS, ACC))
    c = f * tl.load(cx + e, mask=m, other=0).to(ACC) + i * g
    tl.store(cy + e, c.to(cy.dtype.element_ty), mask=m)
    tl.store(hy + e, (o * _tanh(c)).to(hy.dtype.element_ty), mask=m)
    w = ws + row * G + col
    t = ws.dtype.element_ty
    tl.store(w, i.to(t), mask=m)
    tl.store(w + H, f.to(t), mask=m)
    tl.store(w + 2 * H, g.to(t), mask=m)
    tl.store(w + 3 * H, o.to(t), mask=m)


@triton.jit
def _lstm_bwd_kernel(ghy, gcy, cx, cy, ws, gg, gcx, total, H, HAS_GHY: tl.constexpr,
                     HAS_GCY: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    e, m, row, col = _lanes(total, H, BLOCK)
    G = 4 * H
    w = ws + row * G + col
    i = tl.load(w, mask=m, other=0).to(ACC)
    f = tl.load(w + H, mask=m, other=0).to(ACC)
    g = tl.load(w + 2 * H, mask=m, other=0).to(ACC)
    o = tl.load(w + 3 * H, mask=m, other=0).to(ACC)
    tc = _tanh(tl.load(cy + e, mask=m, other=0).to(ACC))
    dh = tl.zeros_like(tc)
    if HAS_GHY:
        dh = tl.load(ghy + e, mask=m, other=0).to(ACC)
    dc = dh * o * (1 - tc * tc)
    if HAS_GCY:
        dc += tl.load(gcy + e, mask=m, other=0).to(ACC)
    c_prev = tl.load(cx + e, mask=m, other=0).to(ACC)
    d = gg + row * G + col
    t = gg.dtype.element_ty
    tl.store(d, (dc * g * i * (1 - i)).to(t), mask=m)
    tl.store(d + H, (dc * c_prev * f * (1 - f)).to(t), mask=m)
    tl.store(d + 2 * H, (dc * i * (1 - g * g)).to(t), mask=m)
    tl.store(d + 3 * H, (dh * tc * o * (1 - o)).to(t), mask=m)
    tl.store(gcx + e, (dc * f).to(gcx.dtype.element_ty), mask=m)


@triton.jit
def _gru_fwd_kernel(ig, hg, ib, hb, hx, hy, ws, total, H, HAS_BIAS: tl.constexpr,
                    ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    e, m, row, col = _lanes(total, H, BLOCK)
    G = 3 * H
    r = _sigmoid(_gate(ig, hg, ib, hb, row, col, G, m, HAS_BIAS, ACC))
    z = _sigmoid(_gate(ig, hg, ib, hb, row, col + H, G, m, HAS_BIAS, ACC))
    n_off = row * G + col + 2 * H
    i_n = tl.load(ig + n_off, mask=m, other=0).to(ACC)
    h_n = tl.load(hg + n_off, mask=m, other=0).to(ACC)
    if HAS_BIAS:
        i_n += tl.load(ib + col + 2 * H, mask=m, other=0).to(ACC)
        h_n += tl.load(hb + col + 2 * H, mask=m, other=0).to(ACC)
    n = _tanh(i_n + r * h_n)
    h_prev = tl.load(hx + e, mask=m, other=0).to(ACC)
    tl.store(hy + e, (n + z * (h_prev - n)).to(hy.dtype.element_ty), mask=m)
    w = ws + row * 5 * H + col
    t = ws.dtype.element_ty
    tl.store(w, r.to(t), mask=m)
    tl.store(w + H, z.to(t), mask=m)
    tl.store(w + 2 * H, n.to(t), mask=m)
    tl.store(w + 3 * H, h_prev.to(t), mask=m)
    tl.store(w + 4 * H, h_n.to(t), mask=m)


@triton.jit
def _gru_bwd_kernel(ghy, ws, gi, gh, ghx, total, H, ACC: tl.constexpr, BLOCK: tl.constexpr):
    e, m, row, col = _lanes(total, H, BLOCK)
    w = ws + row * 5 * H + col
    r = tl.load(w, mask=m, other=0).to(ACC)
    z = tl.load(w + H, mask=m, other=0).to(ACC)
    n = tl.load(w + 2 * H, mask=m, other=0).to(ACC)
    h_prev = tl.load(w + 3 * H, mask=m, other=0).to(ACC)
    h_n = tl.load(w + 4 * H, mask=m, other=0).to(ACC)
    go = tl.load(ghy + e, mask=m, other=0).to(ACC)
    dn = go * (1 - z) * (1 - n * n)
    dr = dn * h_n * r * (1 - r)
    dz = go * (h_prev - n) * z * (1 - z)
    t = gi.dtype.element_ty
    o = row * 3 * H + col
    tl.store(gi + o, dr.to(t), mask=m)
    tl.store(gi + o + H, dz.to(t), mask=m)
    tl.store(gi + o + 2 * H, dn.to(t), mask=m)
    tl.store(gh + o, dr.to(t), mask=m)
    tl.store(gh + o + H, dz.to(t), mask=m)
    tl.store(gh + o + 2 * H, (dn * r).to(t), mask=m)
    tl.store(ghx + e, (go * z).to(ghx.dtype.element_ty), mask=m)


def _check(name, gates, k, state, input_bias, hidden_bias, hidden_gates):
    if gates.dim() != 2 or gates.shape[1] % k or hidden_gates.shape != gates.shape:
        raise RuntimeError(
            f"torch_ext: {name} expects input and hidden gates of one shape (batch, {k} * "
            f"hidden), got {tuple(gates.shape)} and {tuple(hidden_gates.shape)}"
        )
    H = gates.shape[1] // k
    if tuple(state.shape) != (gates.shape[0], H):
        raise RuntimeError(
            f"torch_ext: {name} expects a state of shape {(gates.shape[0], H)}, got "
            f"{tuple(state.shape)}"
        )
    if (input_bias is None) != (hidden_bias is None):
        raise RuntimeError(f"torch_ext: {name} takes both biases or neither")
    for b in (input_bias, hidden_bias):
        if b is not None and tuple(b.shape) != (k * H,):
            raise RuntimeError(
                f"torch_ext: {name} expects biases of shape {(k * H,)}, got {tuple(b.shape)}"
            )
    return H


def _c(t):
    return None if t is None else t.contiguous()


def _grid(total):
    return (cdiv(total, _BLOCK),)


@kernel()
def thnn_fused_lstm_cell(
    input_gates: torch.Tensor,
    hidden_gates: torch.Tensor,
    cx: torch.Tensor,
    input_bias: torch.Tensor | None,
    hidden_bias: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    H = _check("_thnn_fused_lstm_cell", input_gates, 4, cx, input_bias, hidden_bias, hidden_gates)
    ig, hg, c = input_gates.contiguous(), hidden_gates.contiguous(), cx.contiguous()
    hy, cy = torch.empty_like(c), torch.empty_like(c)
    ws = torch.empty_like(ig)
    total = c.numel()
    if total:
        has_bias = input_bias is not None
        launch(
            _lstm_fwd_kernel, _grid(total), ig, hg, _c(input_bias) if has_bias else ig,
            _c(hidden_bias) if has_bias else ig, c, hy, cy, ws, total, H, HAS_BIAS=has_bias,
            ACC=tl_float_acc(ig.dtype), BLOCK=_BLOCK,
        )  # fmt: skip
    return hy, cy, ws


@kernel()
def thnn_fused_lstm_cell_backward_impl(
    grad_hy: torch.Tensor | None,
    grad_cy: torch.Tensor | None,
    cx: torch.Tensor,
    cy: torch.Tensor,
    workspace: torch.Tensor,
    has_bias: bool,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    if grad_hy is None and grad_cy is None:
        return None, None, None
    c, ws = cx.contiguous(), workspace.contiguous()
    gg = torch.empty_like(ws)
    gcx = torch.empty_like(c)
    total = c.numel()
    if total:
        launch(
            _lstm_bwd_kernel, _grid(total), _c(grad_hy) if grad_hy is not None else c,
            _c(grad_cy) if grad_cy is not None else c, c, cy.contiguous(), ws, gg, gcx,
            total, c.shape[1], HAS_GHY=grad_hy is not None, HAS_GCY=grad_cy is not None,
            ACC=tl_float_acc(ws.dtype), BLOCK=_BLOCK,
        )  # fmt: skip
    return gg, gcx, (gg.sum(0) if has_bias else None)


@kernel()
def thnn_fused_gru_cell(
    input_gates: torch.Tensor,
    hidden_gates: torch.Tensor,
    hx: torch.Tensor,
    input_bias: torch.Tensor | None,
    hidden_bias: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    H = _check("_thnn_fused_gru_cell", input_gates, 3, hx, input_bias, hidden_bias, hidden_gates)
    ig, hg, h = input_gates.contiguous(), hidden_gates.contiguous(), hx.contiguous()
    hy = torch.empty_like(h)
    ws = torch.empty((h.shape[0], 5 * H), dtype=ig.dtype, device=ig.device)
    total = h.numel()
    if total:
        has_bias = input_bias is not None
        launch(
            _gru_fwd_kernel, _grid(total), ig, hg, _c(input_bias) if has_bias else ig,
            _c(hidden_bias) if has_bias else ig, h, hy, ws, total, H, HAS_BIAS=has_bias,
            ACC=tl_float_acc(ig.dtype), BLOCK=_BLOCK,
        )  # fmt: skip
    return hy, ws


@kernel()
def thnn_fused_gru_cell_backward(
    grad_hy: torch.Tensor, workspace: torch.Tensor, has_bias: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    ws = workspace.contiguous()
    B, H = ws.shape[0], ws.shape[1] // 5
    gi = torch.empty((B, 3 * H), dtype=ws.dtype, device=ws.device)
    gh = torch.empty_like(gi)
    ghx = torch.empty((B, H), dtype=ws.dtype, device=ws.device)
    total = B * H
    if total:
        launch(
            _gru_bwd_kernel, _grid(total), grad_hy.contiguous(), ws, gi, gh, ghx, total, H,
            ACC=tl_float_acc(ws.dtype), BLOCK=_BLOCK,
        )  # fmt: skip
    if not has_bias:
        return gi, gh, ghx, None, None
    return gi, gh, ghx, gi.sum(0), gh.sum(0)
