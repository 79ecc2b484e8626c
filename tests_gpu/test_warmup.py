"""Issue 14 item 5 on a GPU: a second process runs zero real Triton
compilations for kernels it has seen, and a record precompiles a model's
kernels so that its first step compiles and loads nothing.

Each step runs in its own process (a small GPT-2 train step: forward,
backward, AdamW) with its own TRITON_CACHE_DIR / TORCH_EXT_CACHE_DIR; each
prints its `torch_ext.compile_stats()`, the first step's time and loss. Run
with `-s` to see the timings.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

STEP = r"""
import json, sys, time
import torch, torch_ext
mode = sys.argv[1]
try:
    from transformers import GPT2Config, GPT2LMHeadModel
except ImportError:
    GPT2Config = None
dev = torch.device("privateuseone", 0)
torch.manual_seed(0)
if GPT2Config is not None:
    cfg = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=128)
    model = GPT2LMHeadModel(cfg).to(dev)
    ids = torch.randint(0, 1000, (2, 64)).to(dev)
    loss_of = lambda: model(ids, labels=ids).loss
else:
    layer = torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 2).to(dev)
    x = torch.randn(2, 64, 128).to(dev)
    loss_of = lambda: model(x).square().mean()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
losses = []

def step():
    loss = loss_of()
    loss.backward()
    opt.step()
    opt.zero_grad()
    losses.append(loss.item())

out = {}
if mode == "precompile":
    torch_ext.reset_compile_stats()
    report = torch_ext.warmup("model")
    out["report"] = [report.entries, report.compiled, report.cache_hits, report.already_loaded,
                     report.skipped, report.failed, report.seconds]
    torch_ext.reset_compile_stats()
start = time.perf_counter()
if mode == "record":
    torch_ext.warmup(step, record_as="model")
else:
    step()
torch.privateuseone.synchronize()
out["first_step_s"] = time.perf_counter() - start
out["stats"] = torch_ext.compile_stats()
out["loss"] = losses[0]
print(json.dumps(out))
"""


def _run(tmp_path, triton_cache, *args, module=None):
    env = dict(
        os.environ,
        TRITON_CACHE_DIR=str(tmp_path / triton_cache),
        TORCH_EXT_CACHE_DIR=str(tmp_path / "torch_ext"),
        PYTHONPATH=str(REPO),
    )
    cmd = [sys.executable, "-m", module, *args] if module else [sys.executable, "-c", STEP, *args]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout.strip().splitlines()[-1] if module else json.loads(r.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("warmup")
    first = _run(tmp_path, "triton", "record")
    print(f"\nfirst process, empty caches: {first}")
    return tmp_path, first


def test_first_process_compiles_and_records(recorded):
    tmp_path, first = recorded
    assert first["stats"]["compiled"] > 0
    record = json.loads((tmp_path / "torch_ext" / "warmup" / "model.json").read_text())
    assert len(record["entries"]) >= first["stats"]["compiled"]
    assert any("pointwise" in e for e in record["entries"])  # generated kernels too


def test_second_process_compiles_nothing(recorded):
    tmp_path, first = recorded
    second = _run(tmp_path, "triton", "plain")
    print(f"\nsecond process, warm Triton cache: {second}")
    assert second["stats"]["compiled"] == 0, second
    assert second["stats"]["cache_hits"] > 0
    assert second["loss"] == pytest.approx(first["loss"], rel=1e-5)


@pytest.mark.parametrize("triton_cache", ["triton", "fresh"])
def test_precompiled_first_step_compiles_and_loads_nothing(recorded, triton_cache):
    """With Triton's cache warm (loads) or empty (real compilations, on
    threads): the precompile does it all, the step then finds every kernel
    in memory."""
    tmp_path, first = recorded
    out = _run(tmp_path, triton_cache, "precompile")
    print(f"\nprecompile with the {triton_cache} Triton cache, then a step: {out}")
    entries, compiled, hits, already, skipped, failed, _ = out["report"]
    assert failed == [] and skipped == [], out["report"]
    assert compiled + hits + already == entries
    assert (compiled > 0) == (triton_cache == "fresh")
    assert out["stats"]["compiled"] == 0 and out["stats"]["cache_hits"] == 0, out
    assert out["loss"] == pytest.approx(first["loss"], rel=1e-5)


def test_cli_precompiles_in_parallel(recorded):
    tmp_path, _ = recorded
    line = _run(tmp_path, "cli", "model", "-j", "8", module="torch_ext.warmup")
    print(f"\n{line}")
    assert " 0 failed" in line and " 0 skipped" in line and "compiled" in line
