"""Hugging Face models whose output layer shares the input embedding (GPT-2, BERT's masked LM)
train on privateuseone as on the CPU: the tie survives `.to()`, so the shared weight takes both
gradients. Before the fix, GPT-2's loss drifted from CUDA's within 13 steps."""

import pytest
import torch
import transformers

import torch_ext  # noqa: F401

from helpers import DEV


def gpt2():
    cfg = transformers.GPT2Config(
        vocab_size=61, n_positions=16, n_embd=16, n_layer=2, n_head=2,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(cfg), ("lm_head.weight", "transformer.wte.weight")


def bert():
    cfg = transformers.BertConfig(
        vocab_size=61, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return transformers.BertForMaskedLM(cfg), (
        "cls.predictions.decoder.weight",
        "bert.embeddings.word_embeddings.weight",
    )


def train(build, device, steps=3):
    torch.manual_seed(0)
    model, (out_name, emb_name) = build()
    params = dict(model.named_parameters(remove_duplicate=False))
    assert params[out_name] is params[emb_name]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)  # built before the move
    model.to(device)
    params = dict(model.named_parameters(remove_duplicate=False))
    assert params[out_name] is params[emb_name], "the tie came apart on .to()"
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        ids = torch.randint(0, 61, (2, 12), generator=gen).to(device)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    grad = params[emb_name].grad.detach().cpu()
    return losses, grad, params[emb_name].detach().cpu()


@pytest.mark.parametrize("build", [gpt2, bert], ids=["gpt2", "bert_mlm"])
def test_tied_model_trains_like_cpu(build):
    ref_losses, ref_grad, ref_w = train(build, "cpu")
    losses, grad, w = train(build, DEV)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-3, atol=1e-5)
    torch.testing.assert_close(w, ref_w, rtol=1e-4, atol=1e-5)
