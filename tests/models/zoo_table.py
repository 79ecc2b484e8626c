"""The table of a zoo run: `record` writes its rows (tests/models/test_zoo.py,
tests_gpu/test_torchvision.py) when `ZOO_REPORT=rows.jsonl pytest ...` names a file, then

    python tests/models/zoo_table.py rows.jsonl [more.jsonl ...]

prints one Markdown row per model and test: steps, largest loss difference against the
CPU, largest gradient difference relative to the model's largest gradient (the tensor it
is in), or the largest logit difference of teacher-forced decoding; one column block per
device the files hold (the host driver's `privateuseone:0` and the cuda driver's share a
name, so each file's device is named by its file)."""

import json
import os
import sys


def record(**row) -> None:
    """Appends one JSON line (model, test, steps, differences against the CPU) to the
    file that ZOO_REPORT names, when set. One short write per row, so xdist's workers can
    share the file."""
    path = os.environ.get("ZOO_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def main(paths):
    cols = {}
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            cols.setdefault(path, {})[(r["model"], r["test"])] = r
    keys = sorted({k for rows in cols.values() for k in rows})
    head = "| model | test | steps | " + " | ".join(
        f"{p}: loss diff | {p}: grad diff (rel) / logit diff" for p in cols
    )
    print(head + " |")
    print("|---" * (3 + 2 * len(cols)) + "|")
    for model, test in keys:
        cells, steps = [], ""
        for rows in cols.values():
            r = rows.get((model, test))
            if r is None:
                cells += ["—", "—"]
                continue
            steps = r["steps"]
            loss = f"{r['loss_diff']:.1e}" if "loss_diff" in r else ""
            if "grad_diff_rel" in r:
                other = f"{r['grad_diff_rel']:.1e} ({r['worst_grad']})"
            else:
                other = f"{r['logit_diff']:.1e}"
            cells += [loss, other]
        print(f"| {model} | {test} | {steps} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
