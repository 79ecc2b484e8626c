"""The transformer benchmark's frozen case list (`python -m bench --suite transformer`):
the matrix products of GPT-2 124M and of bench/models' Llama config at 4096 tokens, each in
the three orientations training runs (forward x @ W^T, input gradient dY @ W, weight
gradient dY^T @ x), and scaled-dot-product attention forward + backward at GPT-2-like
(12 heads of 64) and Llama-like (32 heads of 128) widths, causal, at 512, 2048 and 8192
tokens, with and without dropout. bf16. `--shard i/n` and `--scale` as for the conv suite.

Attention runs through F.scaled_dot_product_attention on every side, so torch picks its
own backend on `cuda`; the torch side's record names it (`note`: flash, efficient, cudnn,
math), and the report shows it beside the shape. Batch 8, but 2 at 8192 tokens (one
forward + backward of 8 x 32 heads x 8192^2 takes seconds; 2 keeps each case near a
second while the kernels see the same tile counts per head). With dropout the check
column compares different random masks: its difference is expected there.
"""

import torch
import torch.nn.functional as F

from bench.cases import Case, _randn
from bench.conv_cases import _scaled

TOKENS = 4096
# (model, K, N) of each weight, x: TOKENS x K, W: N x K (nn.Linear's layout)
GEMMS = [
    ("gpt2", 768, 2304),
    ("gpt2", 768, 768),
    ("gpt2", 768, 3072),
    ("gpt2", 3072, 768),
    ("gpt2", 768, 50257),
    ("llama", 1024, 3072),
    ("llama", 1024, 5632),
    ("llama", 2816, 1024),
    ("llama", 1024, 32000),
]
PASSES = ("fwd", "dgrad", "wgrad")
# (heads, head dim, tokens, batch)
ATTENTION = [
    (12, 64, 512, 8),
    (12, 64, 2048, 8),
    (12, 64, 8192, 2),
    (32, 128, 512, 8),
    (32, 128, 2048, 8),
    (32, 128, 8192, 2),
]
DROPOUT = 0.1


def _gemm_case(model, k, n, pas, dtype=torch.bfloat16):
    def make(dt, scale):
        sc = min(1.0, scale) ** (1 / 3)
        m_, k_, n_ = _scaled(TOKENS, sc), _scaled(k, sc), _scaled(n, sc)
        x = _randn(m_, k_, dtype=dt)
        w = _randn(n_, k_, dtype=dt) * k_**-0.5
        dy = _randn(m_, n_, dtype=dt)
        return (x, w, dy)

    def fn(x, w, dy):
        if pas == "fwd":
            return torch.mm(x, w.t())  # "nt"
        if pas == "dgrad":
            return torch.mm(dy, w)  # "nn"
        return torch.mm(dy.t(), x)  # "tn"

    def flops(inputs):
        x, w, _ = inputs
        return 2 * x.shape[0] * x.shape[1] * w.shape[0]

    shape = f"{model} {k}->{n} x{TOKENS} {pas}"
    return Case(f"linear_{pas}", shape, dtype, make, fn, flops=flops, matrix=True, tags=[model])


_BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def _attention_case(heads, dim, tokens, batch, dropout, dtype=torch.bfloat16):
    def make(dt, scale):
        sc = min(1.0, scale) ** (1 / 3)
        b, h, n = _scaled(batch, sc), _scaled(heads, sc), _scaled(tokens, sc)
        q, k, v, g = (_randn(b, h, n, dim, dtype=dt) for _ in range(4))
        return (q, k, v, g)

    def fn(q, k, v, g):
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        return torch.autograd.grad(out, (q, k, v), g)

    def flops(inputs):
        q, k = inputs[0], inputs[1]
        forward = 4 * q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2] * q.shape[3]
        return int(3.5 * forward * 0.5)  # backward 2.5x the forward; causal: half

    def describe(q, k, v, g):
        """The backend torch's SDPA picks for these inputs (its `_fused_sdp_choice`)."""
        choice = torch._fused_sdp_choice(q, k, v, None, dropout, True)
        return _BACKENDS.get(int(choice), str(choice))

    drop = f" dropout {dropout}" if dropout else ""
    shape = f"b{batch} h{heads} L{tokens} d{dim} causal{drop}"
    case = Case("sdpa_fwd_bwd", shape, dtype, make, fn, flops=flops, matrix=True)
    case.describe = describe
    return case


def transformer_cases():
    """The frozen list, in a fixed order."""
    out = [_gemm_case(m, k, n, pas) for m, k, n in GEMMS for pas in PASSES]
    for heads, dim, tokens, batch in ATTENTION:
        for dropout in (0.0, DROPOUT):
            out.append(_attention_case(heads, dim, tokens, batch, dropout))
    return out
