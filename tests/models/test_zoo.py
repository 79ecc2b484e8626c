"""The model zoo (tests/models/zoo.py) on privateuseone against the CPU, with the CPU
fallback an error: two AdamW steps (fewer where an entry says why) compare every step's
loss and, after the last step, every parameter's gradient; decoders' logits under teacher
forcing with a dynamic and a static KV cache compare step by step (tiny random models have
near-ties, so logits, not greedy tokens)."""

from __future__ import annotations

import pytest
import torch
import transformers

import torch_ext  # noqa: F401
import zoo
import zoo_table

from helpers import DEV

# Loss per step, and gradients relative to the largest gradient of the model (each
# entry's grad_rel, 1e-4 unless it says why): float32 on both sides, different summation
# orders.
LOSS_TOL = dict(rtol=1e-4, atol=1e-5)


def _to(batch: dict, device: str) -> dict:
    return {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in batch.items()}


def _channels_last(batch: dict) -> dict:
    return {k: (v.to(memory_format=torch.channels_last) if k == "pixel_values" else v)
            for k, v in batch.items()}  # fmt: skip


def train(
    entry: zoo.Entry, device: str, steps: int | None = None, channels_last=False, compiled=False
):
    torch.manual_seed(0)
    model = entry.build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # built before .to(), as users do
    model.to(device)
    if channels_last:  # as users switch a vision model: weights and inputs
        model.to(memory_format=torch.channels_last)
    forward = torch.compile(model) if compiled else model
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(entry.steps if steps is None else steps):
        batch = _to(entry.batch(gen), device)
        loss = forward(**(_channels_last(batch) if channels_last else batch)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    return losses, grads


def _trains_like_cpu(entry: zoo.Entry, test: str, channels_last: bool = False, compiled=False):
    """Ours (in channels_last, or under torch.compile, if asked) against the CPU's eager
    default layout: every step's loss, and every gradient after the last; the row goes
    to the zoo's table."""
    ref_losses, ref_grads = train(entry, "cpu")
    losses, grads = train(entry, DEV, channels_last=channels_last, compiled=compiled)
    assert grads.keys() == ref_grads.keys()
    scale = max(g.abs().max().item() for g in ref_grads.values())
    worst = max(ref_grads, key=lambda n: (grads[n] - ref_grads[n]).abs().max().item())
    diff = (grads[worst] - ref_grads[worst]).abs().max().item()
    zoo_table.record(
        test=test, model=entry.name, steps=len(losses), device=str(DEV),
        loss_diff=max(abs(a - b) for a, b in zip(losses, ref_losses)),
        grad_diff_rel=diff / scale, worst_grad=worst,
    )  # fmt: skip
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), **LOSS_TOL)
    assert diff <= entry.grad_rel * scale, (
        f"{worst}: gradient differs by {diff:.3e} (scale {scale:.3e})"
    )


@pytest.mark.parametrize("entry", zoo.ALL, ids=[e.name for e in zoo.ALL])
def test_trains_like_cpu(entry):
    _trains_like_cpu(entry, "train")


CONVNETS = [zoo.BY_NAME[n] for n in ("resnet", "convnext", "mobilenet_v2")]


@pytest.mark.parametrize("entry", CONVNETS, ids=[e.name for e in CONVNETS])
def test_channels_last_trains_like_cpu(entry):
    """The convolutional models with weights and inputs in channels_last on our device
    (ResNet-50 in channels_last is a model-benchmark workload) against the CPU in its
    default layout, held to what the NCHW run is held to."""
    _trains_like_cpu(entry, "train channels_last", channels_last=True)


# Under torch.compile: a decoder with tied weights, one with RMS norm and rotary
# embeddings, an encoder, a convolutional net (tests/runtime/test_inductor.py compiles
# small ones in both layouts). T5 and ViT compiled took 130 and 57 s of CI's 2 cores;
# their eager training stays above, and compiled they take the same path (Inductor's
# kernels, our matrix products and attention) as these four.
COMPILED = [zoo.BY_NAME[n] for n in ("gpt2", "llama", "bert_mlm", "resnet")]


@pytest.mark.parametrize("entry", COMPILED, ids=[e.name for e in COMPILED])
def test_compiled_trains_like_cpu(entry):
    """The model under torch.compile's default backend (Inductor, torch_ext/inductor.py)
    on our device, each step's forward and backward compiled, against the CPU's eager
    run: held to what the eager run is held to."""
    torch._dynamo.reset()
    try:
        _trains_like_cpu(entry, "train compiled", compiled=True)
    finally:
        torch._dynamo.reset()


DECODERS = [e for e in zoo.ALL if e.decoder]


def decode_logits(entry: zoo.Entry, device: str, cache: str, prompt: int = 5, steps: int = 6):
    """Teacher-forced decoding: a prompt, then one given token at a time through the cache."""
    torch.manual_seed(0)
    model = entry.build().eval().to(device)
    ids = torch.randint(
        0, zoo.VOCAB, (1, prompt + steps), generator=torch.Generator().manual_seed(2)
    )
    ids = ids.to(device)
    if cache == "static":
        past = transformers.StaticCache(config=model.config, max_cache_len=prompt + steps)
    else:
        past = transformers.DynamicCache(config=model.config)
    out = []
    with torch.inference_mode():
        pos = torch.arange(prompt, device=device)
        res = model(input_ids=ids[:, :prompt], past_key_values=past, use_cache=True,
                    cache_position=pos)  # fmt: skip
        out.append(res.logits[:, -1].cpu())
        for t in range(prompt, prompt + steps - 1):
            pos = torch.tensor([t], device=device)
            res = model(input_ids=ids[:, t : t + 1], past_key_values=res.past_key_values,
                        use_cache=True, cache_position=pos)  # fmt: skip
            out.append(res.logits[:, -1].cpu())
    return torch.stack(out)


@pytest.mark.parametrize("cache", ["dynamic", "static"])
@pytest.mark.parametrize("entry", DECODERS, ids=[e.name for e in DECODERS])
def test_kv_cache_decode_logits_match_cpu(entry, cache):
    ref = decode_logits(entry, "cpu", cache)
    got = decode_logits(entry, DEV, cache)
    zoo_table.record(
        test=f"decode {cache}", model=entry.name, steps=len(got), device=str(DEV),
        logit_diff=(got - ref).abs().max().item(),
    )  # fmt: skip
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
