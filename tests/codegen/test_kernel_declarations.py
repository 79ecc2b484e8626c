"""One name per kernel: the manifest names a kernel once (`triton:`, a stub map, `fake:`),
the kernel declares that name once (`@kernel` in torch_ext/ops), codegen reads the
declarations from the source, and nothing is left over on either side."""

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codegen import kernels
from codegen.manifest import load

ROOT = Path(__file__).resolve().parents[2]
# Kernels the hand-written C++ calls by name (torch_ext::launch::call / pointwise).
CPP_CALL = re.compile(r'launch::(?:call|pointwise)\([^"]*"(\w+)"')


def manifest_names() -> set[str]:
    names = set()
    for e in load(ROOT / "musa_functions.yaml"):
        for key in ("triton", "fake"):
            if isinstance(e.keys.get(key), str):
                names.add(e.keys[key])
        if isinstance(e.keys.get("stub"), dict):
            names.update(e.keys["stub"].values())
    return names


def cpp_names() -> set[str]:
    return {m for p in (ROOT / "csrc").rglob("*.cpp") for m in CPP_CALL.findall(p.read_text())}


def test_every_manifest_kernel_is_declared():
    declared = kernels.declared()
    missing = sorted(
        n for n in manifest_names() | cpp_names() if ":" not in n and n not in declared
    )
    assert missing == []


def test_every_declared_kernel_is_reached():
    reached = manifest_names() | cpp_names()
    dead = sorted(set(kernels.declared()) - reached)
    assert dead == [], f"declared kernels no manifest entry or C++ call reaches: {dead}"


def test_source_declarations_are_the_import_time_registry():
    """What codegen reads without importing is what importing registers."""
    code = "from torch_ext.ops import KERNELS; print(' '.join(sorted(KERNELS)))"
    env = {"TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT), "PATH": ""}
    out = subprocess.run(
        [sys.executable, "-c", _BARE_PACKAGE + code], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == sorted(kernels.declared())


# torch_ext.ops without the compiled extension (the registry needs none).
_BARE_PACKAGE = (
    "import sys, types; p = types.ModuleType('torch_ext'); "
    f"p.__path__ = [{str(ROOT / 'torch_ext')!r}]; sys.modules['torch_ext'] = p; "
)


def test_codegen_imports_no_kernel():
    """Reading the manifest's kernel names imports neither torch_ext nor triton."""
    code = textwrap.dedent(
        """
        import sys
        from codegen import kernels
        assert len(kernels.declared()) > 100
        assert kernels.exists("torch_ext.ops.unary:abs")
        assert not kernels.exists("torch_ext.ops.unary:no_such_function")
        bad = [m for m in sys.modules if m.startswith(("torch_ext", "triton"))]
        assert not bad, bad
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr


def _declare(tmp_path, source: str):
    (tmp_path / "fam.py").write_text(textwrap.dedent(source))
    kernels.declared.cache_clear()
    try:
        return kernels.declared(tmp_path)
    finally:
        kernels.declared.cache_clear()


def test_declaration_forms_and_metadata(tmp_path):
    d = _declare(
        tmp_path,
        """
        @kernel()
        def plain(x): ...

        @kernel("other_name", grid="rows", specialize=("n",))
        @pointwise()
        def scalar_fn(x): ...

        made = factory()
        kernel("made_kernel")(made)
        """,
    )
    assert sorted(d) == ["made_kernel", "other_name", "plain"]
    assert d["other_name"].info == {"grid": "rows", "specialize": ("n",)}
    assert d["plain"].line == 2


def test_declared_twice_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="'k' is declared twice"):
        _declare(tmp_path, '@kernel("k")\ndef a(): ...\n\n@kernel("k")\ndef b(): ...\n')


def test_a_computed_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="needs its name as a string"):
        _declare(tmp_path, "for n in names:\n    kernel(n)(f)\n")


def test_registry_refuses_a_second_declaration():
    from torch_ext.ops._declare import KERNELS, kernel

    name = next(iter(KERNELS))
    with pytest.raises(ValueError, match="declared twice"):
        kernel(name)(lambda: None)


def test_ast_parse_of_every_family_succeeds():
    for p in (ROOT / "torch_ext" / "ops").rglob("*.py"):
        ast.parse(p.read_text())
