"""`--list`, full-text goldens of our own templates, and the real kernel registry.

Goldens live in tests/codegen/golden/; regenerate with
    CODEGEN_UPDATE_GOLDEN=1 python -m pytest tests/codegen
Only outputs that do not depend on torchgen's formatting are kept as goldens
(the --list table and the new-op library file), so they hold for torch 2.11 and 2.13.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import REPO, make_csrc, real_kernel_names, run_cli, write_manifest
from test_modes import CUSTOMIZED_SEED, NEW_OP, TRIL_CSRC_CUSTOMIZED

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CODEGEN_UPDATE_GOLDEN") == "1"

ALL_MODES = (
    CUSTOMIZED_SEED
    + """
    - func: lerp.Scalar_out
      stub: lerp_kernel_scalar_weight
      triton: lerp_scalar
    - func: lerp.Scalar
    - func: lerp_.Scalar
    - func: lerp.Tensor_out
    - func: lerp.Tensor
    - func: lerp_.Tensor
    - func: add.out
      stub: add_stub
      triton: add
    - func: triu.out
      dispatch: {PrivateUse1: MusaTriu}
      triton: tril
    - func: native_layer_norm
      dispatch: {PrivateUse1: musa_layer_norm}
      triton: layer_norm
    """
    + NEW_OP
)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"no golden {path}; run with CODEGEN_UPDATE_GOLDEN=1"
    assert text == path.read_text(), (
        f"{name} differs from the golden (CODEGEN_UPDATE_GOLDEN=1 to accept)"
    )


def test_list(codegen, tmp_path):
    csrc = make_csrc(tmp_path, TRIL_CSRC_CUSTOMIZED)
    r = codegen(ALL_MODES, csrc=csrc, list_only=True)
    assert r.rc == 0, r.err
    assert r.err == ""
    assert not r.outdir.exists()  # --list alone writes nothing
    lines = r.out.splitlines()
    assert lines[0].split() == [
        "entry",
        "line",
        "mode",
        "meta",
        "class",
        "impl",
        "class",
        "/",
        "kernel",
        "body",
    ]
    rows = {
        l.split()[0]: l for l in lines[1:] if l.strip() and not l.startswith(tuple("0123456789"))
    }

    def cols(name):
        return rows[name].split(None, 5)

    assert cols("tril.out")[:5] == [
        "tril.out",
        "1",
        "Customized",
        "at::musa::structured_tril",
        "at::musa::structured_MusaTril",
    ]
    assert cols("tril.out")[5] == "hand-written C++"
    assert cols("lerp.Scalar_out")[:5] == [
        "lerp.Scalar_out",
        "10",
        "Legacy",
        "at::meta::structured_lerp_Scalar",
        "at::native::structured_lerp_Scalar",
    ]
    # body column: wording may change, the facts may not
    assert cols("lerp.Scalar_out")[5].startswith("PyTorch impl")
    assert "lerp_kernel_scalar_weight <- lerp_scalar" in cols("lerp.Scalar_out")[5]
    assert cols("lerp.Tensor_out")[5].startswith("PyTorch impl")
    assert "<-" not in cols("lerp.Tensor_out")[5]
    assert "add_stub <- add" in cols("add.out")[5]
    assert cols("add.out")[2:5] == [
        "Legacy",
        "at::meta::structured_add_Tensor",
        "at::native::structured_ufunc_add_CPU",
    ]
    assert cols("triu.out")[2:6] == [
        "LegacyMeta",
        "at::meta::structured_triu",
        "at::musa::structured_MusaTriu",
        "generated Triton call 'tril'",
    ]
    assert cols("native_layer_norm")[2:6] == [
        "Plain",
        "-",
        "at::musa::musa_layer_norm",
        "generated Triton call 'layer_norm'",
    ]
    assert cols("torch_ext::add_rms_norm")[2:6] == [
        "New",
        "-",
        "add_rms_norm",
        "generated Triton call 'add_rms_norm'",
    ]
    assert lines[-1] == "7 entries: Customized 1, Legacy 3, LegacyMeta 1, New 1, Plain 1"
    check_golden("all_modes.list.txt", r.out)


def test_new_op_library_golden(codegen):
    r = codegen(NEW_OP)
    assert r.rc == 0, r.err
    check_golden("new_op.RegisterTorchExtOps.cpp", r.files()["RegisterTorchExtOps.cpp"])


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_list_and_generate_with_real_registry(tmp_path):
    """No monkeypatch: the CLI checks names against the kernels declared in torch_ext/ops."""
    names = real_kernel_names()
    assert names, "no kernel declared in torch_ext/ops"
    k = "add" if "add" in names else names[0]
    manifest = write_manifest(
        tmp_path,
        f"""
        - func: add.out
          stub: add_stub
          triton: {k}
        - func: tril.out
          dispatch: {{PrivateUse1: MusaTril}}
          triton: {k}
        """,
    )
    csrc = make_csrc(tmp_path)
    out = tmp_path / "gen"
    p = run_cli("--manifest", str(manifest), "--csrc", str(csrc), "--out", str(out), "--list")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert "2 entries: Legacy 1, LegacyMeta 1" in p.stdout
    text = "\n".join(f.read_text() for f in out.iterdir())
    assert f'pointwise_call(a0, "{k}", a1)' in text
    assert f'torch_ext::launch::call("{k}", self, diagonal, out);' in text
    assert sorted(f.name for f in out.iterdir()) == sorted(
        ["MusaFunctions.h", "MusaFunctions_new.h"]
        + [f"MusaFunctions_{i}.h" for i in range(8)]
        + [f"RegisterPrivateUse1_{i}.cpp" for i in range(8)]
    )


def test_registry_lookup_leaves_the_drivers_triton_mode_alone(monkeypatch):
    """With torch_ext imported, its driver has chosen between Triton's
    interpreter and compiler; reading the registry in-process must not switch
    TRITON_INTERPRET on (on a GPU, kernels built lazily afterwards would run
    in the interpreter)."""
    import torch_ext  # noqa: F401  (the real package, with its driver)

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert real_kernel_names()
    assert "TRITON_INTERPRET" not in os.environ


def test_a_changed_entry_rewrites_only_its_shard(tmp_path):
    """Each registration shard includes only the header of its own ops' declarations
    (MusaFunctions.h, for hand-written C++, includes them all): removing an entry
    changes exactly one shard and its header, so a YAML change recompiles one shard,
    not eight."""
    from codegen import __main__ as cg_main

    text = (REPO / "musa_functions.yaml").read_text()
    out = tmp_path / "gen"
    cg_main.generate(str(REPO / "musa_functions.yaml"), str(out), "at::musa", [str(REPO / "csrc")])
    before = {f.name: f.read_text() for f in out.iterdir()}
    manifest = tmp_path / "musa_functions.yaml"
    sgn = (
        "- func: sgn.out\n  stub: sgn_stub\n  triton: sgn\n"
        "  dtypes: floating, integral, bool, complex\n- func: sgn\n- func: sgn_\n"
    )
    manifest.write_text(text.replace(sgn, ""))
    assert manifest.read_text() != text, "the manifest's sgn entries changed shape"
    cg_main.generate(str(manifest), str(out), "at::musa", [str(REPO / "csrc")])
    after = {f.name: f.read_text() for f in out.iterdir()}
    changed = sorted(n for n in before if before[n] != after.get(n))
    assert len(changed) == 2, changed
    header, shard = changed
    k = header.removeprefix("MusaFunctions_").removesuffix(".h")
    assert shard == f"RegisterPrivateUse1_{k}.cpp", changed
    assert 'm.impl("sgn.out"' in before[shard] and 'm.impl("sgn.out"' not in after[shard]
    assert (
        f'#include "{header}"' in after[shard] and '#include "MusaFunctions.h"' not in after[shard]
    )


def test_hand_written_ops_have_headers_of_their_own(tmp_path):
    """Each op with a hand-written body gets a header of its declarations alone, which its
    shard's header includes; csrc/aten's files include those headers, not MusaFunctions.h
    (all of them), so that a manifest change elsewhere leaves them compiled (ccache: the
    variant build of tests/pipeline). Removing an entry of the same shard as glu changes
    that shard and its header, not glu's own header."""
    import re

    from codegen import __main__ as cg_main
    from codegen import gen

    out = tmp_path / "gen"
    manifest = str(REPO / "musa_functions.yaml")
    ops = cg_main.generate(manifest, str(out), "at::musa", [str(REPO / "csrc")])
    own = {o.kernel: o for o in ops if o.handwritten and o.mode != "New"}
    assert {"TritonGlu", "MusaTriu", "triton_arange_out", "fused_sdp_choice"} <= set(own)
    for kernel, op in own.items():
        text = (out / gen.op_header(op)).read_text()
        assert re.search(rf"(\b|_){kernel}\b", text), kernel
        shard = (out / gen.shard_header(gen.shard_of(op))).read_text()
        assert f'#include "{gen.op_header(op)}"' in shard and not re.search(
            rf"(\b|_){kernel}\b", shard.replace(gen.op_header(op), "")
        )
    for cpp in (REPO / "csrc" / "aten").glob("*.cpp"):
        src = cpp.read_text()
        defined = [k for k in own if re.search(rf"\b{k}\)?\(", src)]
        if defined:
            assert '#include "MusaFunctions.h"' not in src, cpp.name
            assert all(f'#include "{gen.op_header(own[k])}"' in src for k in defined), cpp.name
    glu = own["TritonGlu"]
    before = {f.name: f.read_text() for f in out.iterdir()}
    text = Path(manifest).read_text()
    other = next(
        o for o in ops if o.mode == "Legacy" and gen.shard_of(o) == gen.shard_of(glu) and o.entries
    )
    lines = text.splitlines(keepends=True)
    drop = set()
    for e in other.entries:  # all of that op's entries, each to the next "- func:"
        assert lines[e.line - 1].startswith(f"- func: {e.func}"), e
        end = e.line
        while end < len(lines) and lines[end].startswith("  "):
            end += 1
        drop |= set(range(e.line - 1, end))
    changed_manifest = tmp_path / "musa_functions.yaml"
    changed_manifest.write_text("".join(l for i, l in enumerate(lines) if i not in drop))
    cg_main.generate(str(changed_manifest), str(out), "at::musa", [str(REPO / "csrc")])
    after = {f.name: f.read_text() for f in out.iterdir()}
    changed = sorted(n for n in before if before[n] != after.get(n))
    assert gen.shard_header(gen.shard_of(glu)) in changed, changed
    assert gen.op_header(glu) not in changed
