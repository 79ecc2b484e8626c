"""torchvision's models on privateuseone against the CPU (issue 17 item 4). torchvision is
installed on the GPU machine; PyPI's wheel does not import beside the CPU build of torch
2.13 (`torchvision::nms does not exist`), so CI's vision models come from transformers
(tests/models/zoo.py) and this set runs in the GPU command.

Each model, built on the CPU from one seed and copied to the device, takes one AdamW step
on both: the first loss, every gradient and the loss after the step are compared (float32,
TF32 off)."""

import copy

import pytest
import torch
import torch.nn.functional as F
import torchvision

from conftest import DEV

MODELS = {
    "resnet50": lambda: torchvision.models.resnet50(num_classes=10),
    "mobilenet_v3_large": lambda: torchvision.models.mobilenet_v3_large(num_classes=10),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(num_classes=10),
    "vit_b_16": lambda: torchvision.models.vit_b_16(num_classes=10, image_size=64),
}


def _step(model, x, y):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.zero_grad()
    after = F.cross_entropy(model(x), y)
    return loss.item(), grads, after.item()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_trains_like_cpu(name):
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.manual_seed(0)
        model = MODELS[name]()
        # every random drop off (Dropout, EfficientNet's StochasticDepth): the two
        # sides draw different numbers
        for m in model.modules():
            if isinstance(m, (torch.nn.Dropout, torchvision.ops.StochasticDepth)):
                m.p = 0.0
        x, y = torch.randn(2, 3, 64, 64), torch.randint(0, 10, (2,))
        ref = _step(copy.deepcopy(model), x, y)
        got = _step(model.to(DEV), x.to(DEV), y.to(DEV))
    finally:
        torch.backends.cudnn.allow_tf32 = old
    assert got[0] == pytest.approx(ref[0], rel=1e-4), (got[0], ref[0])
    assert set(got[1]) == set(ref[1])
    rows = []
    for n, g in ref[1].items():
        scale = max(g.abs().max().item(), 1e-12)
        rows.append(((got[1][n] - g).abs().max().item() / scale, n, scale))
    rows.sort(reverse=True)
    worst = ", ".join(f"{n} {d:.2e} (largest {s:.1e})" for d, n, s in rows[:5])
    assert rows[0][0] <= 1e-3, f"{name}: gradient differences of their tensors' largest: {worst}"
    assert got[2] == pytest.approx(ref[2], rel=1e-3), (got[2], ref[2])
