"""Launch plans at new sizes: `python -m bench lengths`.

    python -m bench lengths [--lengths 5-14] [--json out.json]

Runs the tiny GPT-2 and Llama of the model zoo (tests/models/zoo.py: 2 layers, batch 2)
forward and backward at each prompt length in turn, on `privateuseone`, and prints for
each length how many ops recorded a launch plan (their Python ran), replayed one, and
stayed on Python; then the tiny Llama decode (dynamic KV cache) over 8 tokens after 4.
With shape classes (csrc/launch/PlanShapes.cpp) a length whose guard regions are known
records nothing. Runs on any driver (the host driver's interpreter: about a minute).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import torch

_TESTS = pathlib.Path(__file__).resolve().parent.parent / "tests"


def _counts(c_ext, before):
    now = c_ext._plan_stats()
    python = now["slow"] - before["slow"] + now["uncacheable"] - before["uncacheable"]
    old = before.get("reasons", {})
    why = {k: n - old.get(k, 0) for k, n in now.get("reasons", {}).items() if n > old.get(k, 0)}
    return {
        "recorded": now["recorded"] - before["recorded"],
        "replayed": now["replayed"] - before["replayed"],
        "python": python,
        "why": why,  # {op: reason} of the calls that stayed on Python (or ended a class)
    }


def measure(lengths):
    import torch_ext

    sys.path[:0] = [str(_TESTS), str(_TESTS / "models")]
    import zoo

    from bench.models import workloads

    c_ext = torch_ext._C
    out = {}
    for name in ("gpt2", "llama"):
        entry = next(e for e in zoo.ALL if e.name == name)
        torch.manual_seed(0)
        model = entry.build().to("privateuseone")
        gen = torch.Generator().manual_seed(3)
        rows = []
        for length in lengths:
            ids = torch.randint(0, zoo.VOCAB, (2, length), generator=gen).to("privateuseone")
            before = c_ext._plan_stats()
            model(input_ids=ids, labels=ids).loss.backward()
            rows.append({"length": length, **_counts(c_ext, before)})
        out[f"{name}_train"] = rows
    run = workloads.WORKLOADS["llama_decode"].build(torch.device("privateuseone"), True)
    for _ in range(4):
        run.step()
    before = c_ext._plan_stats()
    for _ in range(8):
        run.step()
    out["llama_decode_8_tokens"] = _counts(c_ext, before)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench lengths")
    p.add_argument("--lengths", default="5-14", help="first-last prompt length")
    p.add_argument("--json", default="", help="also write the result here")
    args = p.parse_args(argv)
    first, last = (int(x) for x in args.lengths.split("-"))
    result = measure(list(range(first, last + 1)))
    for name in ("gpt2_train", "llama_train"):
        print(f"{name}: length recorded/replayed/python")
        print(
            "  "
            + "  ".join(
                f"{r['length']}:{r['recorded']}/{r['replayed']}/{r['python']}" for r in result[name]
            )
        )
        last = result[name][-1]
        if last["why"]:
            print(
                f"  why, at length {last['length']}: "
                + "; ".join(f"{k} ({n})" for k, n in last["why"].items())
            )
    d = result["llama_decode_8_tokens"]
    print(
        f"llama_decode, 8 tokens: {d['recorded']} recorded, {d['replayed']} replayed, {d['python']} on Python"
    )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
    return 0
