"""The backend's C++ namespace is configured in one place (the CMake cache
variable TORCH_EXT_NAMESPACE, default at::musa; setup.py passes the build
variable of the same name): the generator writes the namespace it is given,
and the hand-written C++ spells it only through the TORCH_EXT_NAMESPACE macro,
so both compile together under another namespace."""

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from torch.utils.cpp_extension import include_paths

from codegen import __main__ as cg_main

REPO = Path(__file__).resolve().parents[2]
OTHER = "at::other_ns"
HANDWRITTEN = [REPO / "csrc", REPO / "tests" / "pipeline" / "variant" / "csrc"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("ns_generated")
    cg_main.generate(str(REPO / "musa_functions.yaml"), str(out), OTHER, [str(REPO / "csrc")])
    return out


def test_generated_code_uses_the_given_namespace(generated):
    files = {p.name: p.read_text() for p in generated.iterdir()}
    assert "MusaFunctions.h" in files and len(files) >= 18
    assert all(f"namespace {OTHER} {{" in files[f"MusaFunctions_{i}.h"] for i in range(8))
    for name, text in files.items():
        assert "at::musa" not in text, name
    assert any(f"{OTHER}::" in t for t in files.values())


def test_handwritten_cpp_names_no_namespace_of_its_own():
    for folder in HANDWRITTEN:
        for path in folder.rglob("*"):
            if path.suffix in (".cpp", ".h"):
                assert "at::musa" not in path.read_text(), (
                    f"{path.relative_to(REPO)} spells at::musa; use TORCH_EXT_NAMESPACE"
                )
    uses = [p for p in (REPO / "csrc").rglob("*.cpp") if "TORCH_EXT_NAMESPACE" in p.read_text()]
    assert len(uses) >= 3


def test_cmake_and_setup_pass_one_namespace():
    cmake = (REPO / "CMakeLists.txt").read_text()
    assert re.search(r'set\(TORCH_EXT_NAMESPACE "at::musa" CACHE STRING', cmake)
    assert '--namespace "${TORCH_EXT_NAMESPACE}"' in cmake
    assert "TORCH_EXT_NAMESPACE=${TORCH_EXT_NAMESPACE}" in cmake
    assert "-DTORCH_EXT_NAMESPACE=" in (REPO / "setup.py").read_text()


@pytest.mark.parametrize("source", ["aten/Triu.cpp", "aten/Attention.cpp"])
def test_handwritten_bodies_compile_in_another_namespace(generated, source):
    """Triu.cpp defines structured_MusaTriu's impl, declared by the generated
    header in at::other_ns: it compiles only if it follows the macro."""
    cxx = shutil.which("c++") or shutil.which("g++")
    assert cxx, "no C++ compiler"
    includes = [f"-I{REPO / 'csrc'}", f"-I{generated}"]
    includes += [f"-isystem{p}" for p in [sysconfig.get_paths()["include"], *include_paths()]]
    cmd = [cxx, "-std=gnu++20", "-fsyntax-only", f"-DTORCH_EXT_NAMESPACE={OTHER}"]
    cmd += ["-DTORCH_EXTENSION_NAME=_C", *includes, str(REPO / "csrc" / source)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


def test_a_mismatched_namespace_does_not_compile(generated, tmp_path):
    """The check above can fail: a body in at::musa finds no class to define."""
    body = tmp_path / "Wrong.cpp"
    body.write_text(
        '#include "MusaFunctions.h"\n'
        "namespace at::musa {\n"
        "TORCH_IMPL_FUNC(MusaTriu)(const Tensor& self, int64_t diagonal, const Tensor& result) {}\n"
        "}\n"
    )
    cxx = shutil.which("c++") or shutil.which("g++")
    includes = [f"-I{REPO / 'csrc'}", f"-I{generated}"]
    includes += [f"-isystem{p}" for p in [sysconfig.get_paths()["include"], *include_paths()]]
    cmd = [cxx, "-std=gnu++20", "-fsyntax-only", *includes, str(body)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    assert "structured_MusaTriu" in r.stderr
