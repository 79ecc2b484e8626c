"""Models at many sequence lengths: launch plans' shape classes (csrc/launch/PlanShapes.cpp)
replay one plan per op for every length where the decisions its Python made still hold.
A decoder's forward and backward at ten prompt lengths must match the CPU at each length,
and the later lengths must mostly replay plans recorded at other lengths."""

from __future__ import annotations

import pytest
import torch

import torch_ext
import zoo

from helpers import DEV

C = torch_ext._C
ENTRIES = [e for e in zoo.ALL if e.name in ("gpt2", "llama")]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_forward_and_backward_at_ten_lengths(entry):
    torch.manual_seed(0)
    model = entry.build()
    dev_model = entry.build()
    dev_model.load_state_dict(model.state_dict())
    dev_model.to(DEV)
    gen = torch.Generator().manual_seed(3)
    generalized = []
    for length in range(5, 15):
        ids = torch.randint(0, zoo.VOCAB, (2, length), generator=gen)
        before = dict(C._plan_stats())
        out = dev_model(input_ids=ids.to(DEV), labels=ids.to(DEV))
        out.loss.backward()
        generalized.append(C._plan_stats()["generalized"] - before["generalized"])
        ref = model(input_ids=ids, labels=ids)
        ref.loss.backward()
        torch.testing.assert_close(out.logits.cpu(), ref.logits, rtol=1e-4, atol=1e-4)
        for (name, p), (_, q) in zip(model.named_parameters(), dev_model.named_parameters()):
            if p.grad is not None:
                torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-3, atol=1e-4, msg=name)
        model.zero_grad()
        dev_model.zero_grad()
    assert sum(generalized[4:]) >= 6 * 10, generalized  # most ops of later lengths replay
