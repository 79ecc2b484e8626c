"""torchvision's models on privateuseone against the CPU (issue 17 item 4). torchvision is
installed on the GPU machine; PyPI's wheel does not import beside the CPU build of torch
2.13 (`torchvision::nms does not exist`), so CI's vision models come from transformers
(tests/models/zoo.py) and this set runs in the GPU command.

Each model, built on the CPU from one seed and copied to the device, takes one AdamW step
there, on the CPU in float32 and on the CPU in float64 (TF32 off). Batch norm over a
batch of 2 at 64x64 (2x2 maps in the last stages) is ill-conditioned: the CPU's own
float32 gradients are up to 0.1 of a tensor's largest off the float64 ones (ResNet-50),
and some gradients are rounding noise around zero (a batch-norm bias before another
normalisation: 1e-9). So each gradient is held to float64: no further from it than 4x
the CPU's float32 error or 1e-3 of the tensor's largest (floored at 1e-6 of the model's
largest gradient). Measured on the host driver, ours are at or below the CPU's error."""

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
        exact = _step(copy.deepcopy(model).double(), x.double(), y)
        ref = _step(copy.deepcopy(model), x, y)
        got = _step(model.to(DEV), x.to(DEV), y.to(DEV))
    finally:
        torch.backends.cudnn.allow_tf32 = old
    assert got[0] == pytest.approx(exact[0], rel=1e-4), (got[0], ref[0], exact[0])
    assert set(got[1]) == set(exact[1])
    floor = 1e-6 * max(g.abs().max().item() for g in exact[1].values())
    rows = []
    for n, g in exact[1].items():
        g = g.double()
        scale = max(g.abs().max().item(), floor)
        ours = (got[1][n].double() - g).abs().max().item() / scale
        cpu = (ref[1][n].double() - g).abs().max().item() / scale
        rows.append((ours - max(4 * cpu, 1e-3), ours, cpu, n))
    rows.sort(reverse=True)
    worst = ", ".join(f"{n} {o:.1e} (CPU float32 {c:.1e})" for _, o, c, n in rows[:5])
    assert rows[0][0] <= 0, f"{name}: gradients off float64, of their tensors' largest: {worst}"
    # after the step: the loss as close to float64's as the CPU's float32 (or 1e-3)
    assert abs(got[2] - exact[2]) <= max(4 * abs(ref[2] - exact[2]), 1e-3 * abs(exact[2])), (
        got[2],
        ref[2],
        exact[2],
    )
