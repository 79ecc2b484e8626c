"""The model workloads of issue 13, defined once: `python -m bench models`,
the CI smoke test and later issues import them from here.

Each workload is a `Workload`: `build(device, tiny)` returns a `Run` whose
`step()` does one unit of work (a training step, or one decoded token) and
returns the loss (None for decode). Weights and inputs are drawn on the CPU
from a fixed seed, then moved, so every side starts from the same numbers.

Full sizes are the issue's; `tiny=True` keeps the structure (2 layers, small
widths, batch 2, short sequences) so the smoke test runs on the host driver.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import torch


@dataclasses.dataclass
class Run:
    step: Callable[[], Optional[float]]
    units_per_step: int  # tokens or images one step processes
    unit: str  # "tokens" or "images"
    params: int


@dataclasses.dataclass
class Workload:
    name: str
    description: str
    build: Callable[..., Run]
    kind: str  # "train" or "decode"
    ms_label: str = "ms/step"


def _autocast(device):
    dtype = torch.bfloat16
    if device.type == "cpu":
        return torch.autocast("cpu", dtype=dtype)
    return torch.autocast(device.type, dtype=dtype)


def _train_step(model, loss_fn, optimizer, device, compile_fn=None):
    """One autocast bf16 forward, backward and optimizer step."""

    def fwd_bwd():
        with _autocast(device):
            loss = loss_fn(model)
        loss.backward()
        return loss

    if compile_fn is not None:
        fwd_bwd = compile_fn(fwd_bwd)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = fwd_bwd()
        optimizer.step()
        return loss.detach()

    return step


def _seeded_tokens(vocab, batch, seq, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, seq), generator=g)


def _gpt2_config(tiny):
    from transformers import GPT2Config

    if tiny:
        return GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        )  # fmt: skip
    return GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)  # 124M


def _llama_config(tiny, layers=8):
    from transformers import LlamaConfig

    if tiny:
        return LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, vocab_size=512,
            max_position_embeddings=128, attention_dropout=0.0,
        )  # fmt: skip
    return LlamaConfig(
        hidden_size=1024, intermediate_size=2816, num_hidden_layers=layers,
        num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
        max_position_embeddings=2048, attention_dropout=0.0,
    )  # fmt: skip


def _causal_lm_train(make_config, device, tiny, compile_fn=None, **_):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    config = make_config(tiny)
    model = AutoModelForCausalLM.from_config(config).to(device)
    model.train()
    batch, seq = (2, 16) if tiny else (8, 512)
    ids = _seeded_tokens(config.vocab_size, batch, seq).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def loss_fn(m):
        return m(input_ids=ids, labels=ids).loss

    step = _train_step(model, loss_fn, opt, device, compile_fn)
    nparams = sum(p.numel() for p in model.parameters())
    return Run(lambda: float(step()), batch * seq, "tokens", nparams)


def gpt2_train(device, tiny=False, compile_fn=None, **kw):
    return _causal_lm_train(_gpt2_config, device, tiny, compile_fn)


def llama_train(device, tiny=False, compile_fn=None, **kw):
    return _causal_lm_train(_llama_config, device, tiny, compile_fn)


def _llama_decode(device, tiny, static, compile_fn=None, **_):
    """Greedy decoding, batch 1: a 32-token prompt, then one token per step
    with the KV cache (the step is one forward of one token)."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    config = _llama_config(tiny)
    model = AutoModelForCausalLM.from_config(config).to(device=device, dtype=torch.bfloat16)
    model.eval()
    prompt_len, new_tokens = (8, 64) if tiny else (32, 64)
    prompt = _seeded_tokens(config.vocab_size, 1, prompt_len).to(device)
    fwd = model
    if compile_fn is not None:
        fwd = compile_fn(model)
    state = {}

    def new_cache():
        if static:
            from transformers import StaticCache

            return StaticCache(config=config, max_cache_len=prompt_len + new_tokens + 8)
        from transformers import DynamicCache

        return DynamicCache()

    @torch.no_grad()
    def prefill():
        cache = new_cache()
        out = fwd(input_ids=prompt, past_key_values=cache, use_cache=True,
                  cache_position=torch.arange(prompt_len, device=device))  # fmt: skip
        state.update(cache=out.past_key_values, pos=prompt_len, generated=0)
        state["next"] = out.logits[:, -1:].argmax(-1)

    @torch.no_grad()
    def step():
        if not state or state["generated"] >= new_tokens:
            prefill()
        pos = state["pos"]
        out = fwd(
            input_ids=state["next"], past_key_values=state["cache"], use_cache=True,
            cache_position=torch.tensor([pos], device=device),
        )  # fmt: skip
        state["cache"] = out.past_key_values
        state["next"] = out.logits[:, -1:].argmax(-1)
        state["pos"] = pos + 1
        state["generated"] += 1
        return None

    nparams = sum(p.numel() for p in model.parameters())
    return Run(step, 1, "tokens", nparams)


def llama_decode(device, tiny=False, compile_fn=None, **kw):
    return _llama_decode(device, tiny, False, compile_fn)


def llama_decode_static(device, tiny=False, compile_fn=None, **kw):
    return _llama_decode(device, tiny, True, compile_fn)


def _resnet_train(device, tiny, channels_last, compile_fn=None, **_):
    import torchvision

    torch.manual_seed(0)
    if tiny:
        model = torchvision.models.resnet18(num_classes=10)
        batch, size, classes = 2, 32, 10
    else:
        model = torchvision.models.resnet50()
        batch, size, classes = 32, 224, 1000
    model = model.to(device)
    g = torch.Generator().manual_seed(1)
    images = torch.randn(batch, 3, size, size, generator=g).to(device)
    labels = torch.randint(0, classes, (batch,), generator=g).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def loss_fn(m):
        return torch.nn.functional.cross_entropy(m(images), labels)

    step = _train_step(model, loss_fn, opt, device, compile_fn)
    nparams = sum(p.numel() for p in model.parameters())
    return Run(lambda: float(step()), batch, "images", nparams)


def resnet50_train(device, tiny=False, compile_fn=None, **kw):
    return _resnet_train(device, tiny, False, compile_fn)


def resnet50_train_cl(device, tiny=False, compile_fn=None, **kw):
    return _resnet_train(device, tiny, True, compile_fn)


WORKLOADS = {
    w.name: w
    for w in (
        Workload("gpt2_train", "GPT-2 124M (HF, from config) train step, 8x512, AdamW", gpt2_train,
                 "train"),
        Workload("llama_train", "Llama 8 layers x 1024, GQA 16/4, train step 8x512, AdamW",
                 llama_train, "train"),
        Workload("llama_decode", "Llama (as above) bf16 greedy decode, batch 1, 32-token prompt, "
                 "dynamic KV cache", llama_decode, "decode", "ms/token"),
        Workload("llama_decode_static", "as llama_decode, static KV cache", llama_decode_static,
                 "decode", "ms/token"),
        Workload("resnet50_train", "torchvision ResNet-50 train step, 32x224x224, SGD momentum, "
                 "NCHW", resnet50_train, "train"),
        Workload("resnet50_train_cl", "as resnet50_train, channels_last", resnet50_train_cl,
                 "train"),
    )
}  # fmt: skip

# Tiny configurations: GPT-2 / Llama with 2 layers of width 64, ResNet-18 on 32x32.
TINY_NOTE = "tiny: 2-layer width-64 GPT-2/Llama, batch 2x16, ResNet-18 at 2x32x32"
