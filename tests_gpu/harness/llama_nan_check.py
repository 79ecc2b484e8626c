"""bench/models' Llama (its train config: 8 layers, GQA 16/4 heads, batch 8 x 512 tokens)
on privateuseone under bf16 autocast, one forward and backward with a hook on every
module: prints the loss, the first module whose output (forward) or input gradient
(backward) is not finite, and the parameters with non-finite gradients. Needs the built
extension and a GPU (session 21: the NaN loss traced to a matrix product).

    python tests_gpu/harness/llama_nan_check.py LABEL
"""

import sys, torch, torch_ext  # noqa
from bench.models import workloads as W
from transformers import AutoModelForCausalLM

dev = torch.device("privateuseone")
torch.manual_seed(0)
cfg = W._llama_config(False)
model = AutoModelForCausalLM.from_config(cfg).to(dev)
ids = W._seeded_tokens(cfg.vocab_size, 8, 512).to(dev)
first = []


def fh(name):
    def hook(m, inp, out):
        o = out[0] if isinstance(out, (tuple, list)) else out
        if torch.is_tensor(o) and not first and not torch.isfinite(o.float()).all():
            first.append(("fwd", name, type(m).__name__))

    return hook


def bh(name):
    def hook(m, gin, gout):
        for g in gin:
            if torch.is_tensor(g) and not torch.isfinite(g.float()).all():
                if not any(f[0] == "bwd" for f in first):
                    first.append(("bwd", name, type(m).__name__))
                return

    return hook


for n, m in model.named_modules():
    m.register_forward_hook(fh(n))
    m.register_full_backward_hook(bh(n))
with torch.autocast("privateuseone", dtype=torch.bfloat16):
    loss = model(input_ids=ids, labels=ids).loss
loss.backward()
bad = [
    n
    for n, p in model.named_parameters()
    if p.grad is not None and not torch.isfinite(p.grad.float()).all()
]
print(
    sys.argv[1], "loss", loss.item(), "first nan", first, "bad grads", len(bad), bad[:4], flush=True
)
