"""A few channels_last ResNet-50 convolutions (batch 32, bf16), each pass once, on
privateuseone (ours) or cuda (cuDNN): for ncu. argv: side [reps]."""
import sys, torch
sys.path.insert(0, "/tmp/w")
side = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 1
if side != "cuda":
    import torch_ext  # noqa
dev = torch.device(side)
CASES = [  # (pass, cin, cout, k, stride, hw)
    ("fwd", 512, 512, 3, 1, 7), ("fwd", 1024, 512, 1, 1, 14), ("fwd", 128, 128, 3, 1, 28),
    ("dgrad", 128, 128, 3, 2, 56), ("dgrad", 512, 512, 3, 1, 7),
    ("wgrad", 512, 256, 1, 1, 28), ("wgrad", 256, 256, 3, 1, 14),
]
cl = torch.channels_last
sync = getattr(torch, dev.type).synchronize
for p, cin, cout, k, s, hw in CASES:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, cin, hw, hw, generator=g).to(torch.bfloat16).to(dev).contiguous(memory_format=cl)
    w = (torch.randn(cout, cin, k, k, generator=g) * 0.05).to(torch.bfloat16).to(dev).contiguous(memory_format=cl)
    pad = k // 2
    y = torch.nn.functional.conv2d(x, w, None, s, pad)
    dy = torch.randn(y.shape, generator=g).to(torch.bfloat16).to(dev).contiguous(memory_format=cl)
    mask = {"fwd": None, "dgrad": [True, False, False], "wgrad": [False, True, False]}[p]
    sync()
    for _ in range(reps):
        if mask is None:
            torch.nn.functional.conv2d(x, w, None, s, pad)
        else:
            torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [pad, pad], [1, 1], False, [0, 0], 1, mask)
    sync()
    print(f"{side} {p} {cin}->{cout} k{k} s{s} @{hw} done", flush=True)
