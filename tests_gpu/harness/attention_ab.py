"""The attention kernels of another version (a saved copy of ops/attention_kernels.py)
against this checkout's, and both against torch's SDPA: forward and backward ms, bf16
causal, the shared tiles, on torch's cuda tensors (standalone: no build needed). A line
per case, the totals, and `verdict: new` or `verdict: old` (the smaller sum of forward
and backward over the cases, new kept within 2%).

    git show REV:torch_ext/ops/attention_kernels.py > /tmp/old_attention_kernels.py
    python tests_gpu/harness/attention_ab.py /tmp/old_attention_kernels.py

Since session 22 the kernels' shared helpers live in ops/attention_common.py, which a
saved copy imports from this checkout: an A/B of the helpers themselves needs both files
swapped.
"""

import importlib.util
import sys

from standalone import DEV  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from torch_ext.ops import attention  # noqa: E402

spec = importlib.util.spec_from_file_location("old_attention_kernels", sys.argv[1])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
NEW = (attention._attn_fwd_kernel, attention._attn_bwd_delta_kernel, attention._attn_bwd_kernel)
OLD = (old._attn_fwd_kernel, old._attn_bwd_delta_kernel, old._attn_bwd_kernel)


def use(ks):
    attention._attn_fwd_kernel, attention._attn_bwd_delta_kernel, attention._attn_bwd_kernel = ks


CASES = [
    (32, 12, 12, 512, 64),
    (32, 16, 4, 512, 64),
    (8, 12, 12, 2048, 64),
    (4, 32, 8, 2048, 128),
    (2, 12, 12, 8192, 64),
]
tot = {"old": 0.0, "new": 0.0}
for B, H, HK, L, D in CASES:
    dt = torch.bfloat16
    q = torch.randn(B, L, H, D, device=DEV, dtype=dt).transpose(1, 2)
    k = torch.randn(B, HK, L, D, device=DEV, dtype=dt)
    v = torch.randn(B, HK, L, D, device=DEV, dtype=dt)
    g = torch.randn(B, H, L, D, device=DEV, dtype=dt)
    qt, kt, vt = (t.detach().requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=HK != H)
    tf = do_bench(
        lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=HK != H),
        warmup=10,
        rep=60,
    )
    tb = do_bench(
        lambda: torch.autograd.grad(ref, (qt, kt, vt), g, retain_graph=True), warmup=10, rep=60
    )
    res = {}
    for name, ks in (("old", OLD), ("new", NEW)):
        use(ks)
        out, lse = attention.flash_attention_fwd(q, k, v, None, True)
        grads = attention.flash_attention_bwd(g, q, k, v, out, lse, None, True)
        f = do_bench(lambda: attention.flash_attention_fwd(q, k, v, None, True), warmup=10, rep=60)
        b = do_bench(
            lambda: attention.flash_attention_bwd(g, q, k, v, out, lse, None, True),
            warmup=10,
            rep=60,
        )
        res[name] = (f, b, out, grads)
        tot[name] += f + b
    use(NEW)
    diff = max(
        (a.float() - c.float()).abs().max().item()
        for a, c in zip(
            (res["old"][2],) + tuple(res["old"][3]), (res["new"][2],) + tuple(res["new"][3])
        )
    )
    print(
        f"B{B} H{H}/{HK} L{L} D{D}: torch fwd {tf:.3f} bwd {tb:.3f} | old fwd {res['old'][0]:.3f} bwd {res['old'][1]:.3f} | new fwd {res['new'][0]:.3f} bwd {res['new'][1]:.3f} | fwd new/torch {tf / res['new'][0]:.2f}x bwd {tb / res['new'][1]:.2f}x | max diff old-new {diff:.2e}",
        flush=True,
    )
print(f"totals old {tot['old']:.3f} new {tot['new']:.3f}")
print("verdict:", "new" if tot["new"] <= tot["old"] * 1.02 else "old")
