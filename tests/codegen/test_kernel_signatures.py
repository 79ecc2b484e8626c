"""Every kernel wrapper that C++ calls (`@kernel` in torch_ext/ops) says in annotations what
it is called with: the Python types that csrc/launch/Launcher.h's to_arg makes of the
C++ arguments (Tensor -> torch.Tensor, optional -> `| None`, IntArrayRef -> list[int],
ScalarType -> torch.dtype, Scalar -> Scalar, TensorList -> list[torch.Tensor]) and what
it returns (a std::vector<Tensor> result is a Python list of tensors). `@triton.jit`
functions are left alone: Triton reads their annotations itself (tl.constexpr).
This reads the source; wrappers registered by a call (`kernel("name")(fn)`, closures a
factory makes) are checked on the imported registry by tests/ops/test_kernel_annotations.py."""

import ast
import inspect
import re
import types
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "torch_ext" / "ops"


def _decorators(fn: ast.FunctionDef) -> list[str]:
    return [ast.unparse(d) for d in fn.decorator_list]


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any(d.split("(")[0].endswith("jit") for d in _decorators(fn))


def kernel_wrappers() -> list[tuple[Path, ast.FunctionDef]]:
    """(file, def) of each `@kernel`-declared Python function, triton.jit ones excepted."""
    found = []
    for path in sorted(OPS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef):
                continue
            if any(d.split("(")[0] == "kernel" for d in _decorators(node)) and not _is_jit(node):
                found.append((path, node))
    return found


def unannotated(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    params += [p for p in (a.vararg, a.kwarg) if p is not None]
    missing = [p.arg for p in params if p.annotation is None]
    if fn.returns is None:
        missing.append("return")
    return missing


def test_wrappers_are_found():
    names = {fn.name for _, fn in kernel_wrappers()}
    # One from each kind: a structured out impl, a stub (TensorIterator) kernel, a
    # function returning tensors; and no triton.jit scalar function.
    assert {"sum_out", "nan_to_num", "native_dropout", "foreach_norm"} <= names, names
    assert "acosh" not in names and len(names) > 250


def test_every_kernel_wrapper_is_annotated():
    bad = [
        f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name}: {', '.join(missing)}"
        for path, fn in kernel_wrappers()
        if (missing := unannotated(fn))
    ]
    assert not bad, "kernel wrappers without annotations:\n" + "\n".join(bad)


def test_the_check_sees_a_missing_annotation():
    src = "@kernel()\ndef f(self: torch.Tensor, dim) -> None: ...\n"
    fn = ast.parse(src).body[0]
    assert unannotated(fn) == ["dim"]
    jit = ast.parse("@kernel()\n@pointwise()\n@triton.jit\ndef g(x): ...\n").body[0]
    assert _is_jit(jit)


# What the C++ hands a kernel, by C++ type (csrc/launch/Launcher.h to_arg), as Python
# types; `std::optional<T>` adds None.
def _cpp_types() -> dict[str, object]:
    import torch

    from torch_ext.ops._declare import Scalar

    return {
        "Tensor": torch.Tensor,
        "TensorBase": torch.Tensor,
        "OptionalTensorRef": torch.Tensor | None,
        "IntArrayRef": list[int],
        "ArrayRef<int64_t>": list[int],
        "OptionalIntArrayRef": list[int] | None,
        "int64_t": int,
        "uint64_t": int,
        "SymInt": int,
        "double": float,
        "bool": bool,
        "Scalar": Scalar,
        "OptionalScalarRef": Scalar | None,
        "ScalarType": torch.dtype,
        "string_view": str,
        "std::string_view": str,
        "std::string": str,
        "TensorList": list[torch.Tensor],
        "ITensorListRef": list[torch.Tensor],
        "List<std::optional<Tensor>>": list[torch.Tensor | None],
        "Generator": torch.Generator,
        "Layout": torch.layout,
        "Device": torch.device,
        "MemoryFormat": torch.memory_format,
        "TransposeType": int,  # an enum: Python gets the int
        "ArrayRef<double>": list[float],
        "ArrayRef<Scalar>": list[Scalar],
    }


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "<([") - (ch in ">)]")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


def _py_type(cpp: str, table: dict[str, object]) -> object:
    t = re.sub(r"\bconst\b|&", "", cpp)
    t = re.sub(r"\s+", " ", t).replace("::std::", "std::").strip()
    t = re.sub(r"\b(at|c10)::", "", t)
    if m := re.fullmatch(r"std::optional<(.*)>", t):
        return _py_type(m.group(1), table) | None
    if re.fullmatch(r"std::array<bool, ?\d+>", t):
        return list[bool]
    if m := re.fullmatch(r"std::vector<(.*)>", t):
        return list[_py_type(m.group(1), table)]
    if m := re.fullmatch(r"std::tuple<(.*)>", t):
        return tuple[tuple(_py_type(x, table) for x in _split(m.group(1)))]
    if t == "void":
        return None
    if t not in table:
        raise AssertionError(f"no Python type known for the C++ type {cpp!r}")
    return table[t]


_FUNCTION = re.compile(
    r"^(?P<head>[^\n{};#]*?)\((?P<params>[^{};]*)\)\s*\{\n(?P<body>(?:(?!\}).*\n)*?)\}", re.M
)
_CALL = re.compile(
    r"launch::(?P<kind>call|pointwise_call|pointwise)(?:<(?P<ret>[^(]*)>)?\((?P<args>[^;]*)\);"
)


def call_sites(texts: list[str]) -> dict[str, list[tuple[list[object], object]]]:
    """kernel name -> [(Python types of the arguments C++ passes, return type)] for every
    `torch_ext::launch::call` / `pointwise_call` in the given C++ sources. An argument that
    is not a parameter of the enclosing function is left out (None)."""
    import torch

    table = _cpp_types()
    iterator = [tuple[torch.Tensor, ...], tuple[torch.Tensor, ...], torch.dtype]
    sites: dict[str, list] = {}
    for text in texts:
        for fn in _FUNCTION.finditer(text):
            params = fn.group("params")
            if "TORCH_IMPL_FUNC" in fn.group("head") and ")(" in params:
                params = params.split(")(", 1)[1]
            types = {}
            for p in _split(params):
                if m := re.fullmatch(r"(.*?)\s*\b(\w+)", p):
                    types[m.group(2)] = m.group(1)
            for c in _CALL.finditer(fn.group("body")):
                args = _split(c.group("args"))
                if c.group("kind") == "call":
                    name, rest, prefix = args[0].strip('"'), args[1:], []
                else:
                    name, rest, prefix = args[1].strip('"'), args[2:], iterator
                passed = prefix + [_py_type(types[a], table) if a in types else None for a in rest]
                ret = _py_type(c.group("ret"), table) if c.group("ret") else None
                sites.setdefault(name, []).append((passed, ret))
    return sites


def _members(t: object) -> set:
    if isinstance(t, types.UnionType) or typing.get_origin(t) is typing.Union:
        return set().union(*(_members(a) for a in typing.get_args(t)))
    return {type(None) if t is None else t}


def accepts(annotation: object, passed: object) -> bool:
    """Whether a value of type `passed` fits `annotation` (int fits float, bool fits int)."""
    have = _members(annotation)
    widen = {bool: (int, float), int: (float,)}
    return all(m in have or any(w in have for w in widen.get(m, ())) for m in _members(passed))


def returns_fit(annotation: object, cpp: object) -> bool:
    """Whether what the wrapper says it returns is what C++ takes back (Launcher.h Unbox):
    the same type, element by element for tuples, where a tuple's tensor may be None (an
    output that output_mask did not ask for comes back as an undefined tensor)."""
    import torch

    if typing.get_origin(cpp) is tuple and typing.get_origin(annotation) is tuple:
        have, want = typing.get_args(annotation), typing.get_args(cpp)
        return len(have) == len(want) and all(
            returns_fit(h, w | None if w is torch.Tensor else w) for h, w in zip(have, want)
        )
    return _members(annotation) <= _members(cpp)


def mismatches(fn, sites) -> list[str]:
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p for p in params if p.kind == p.VAR_POSITIONAL), None)
    bad = []
    for passed, ret in sites:
        for i, t in enumerate(passed):
            p = positional[i] if i < len(positional) else star
            if p is None:
                bad.append(f"C++ passes {len(passed)} arguments, it takes {len(positional)}")
                break
            if t is not None and not accepts(hints[p.name], t):
                bad.append(f"{p.name}: C++ passes {t}, annotated {hints[p.name]}")
        for p in positional[len(passed) :]:
            if p.default is p.empty:
                bad.append(f"{p.name}: C++ does not pass it and it has no default")
        if ret is not None and not returns_fit(hints["return"], ret):
            bad.append(f"return: C++ expects {ret}, annotated {hints['return']}")
    return bad


@pytest.mark.slow  # runs the generator on the real manifest: seconds
def test_annotations_match_what_the_cpp_passes(tmp_path, capsys):
    """The annotations say what the generated and hand-written C++ really passes."""
    import codegen.__main__ as cg_main
    from torch_ext.ops import KERNELS

    out = tmp_path / "generated"
    argv = ["--manifest", str(ROOT / "musa_functions.yaml"), "--csrc", str(ROOT / "csrc")]
    assert cg_main.main([*argv, "--out", str(out)]) == 0, capsys.readouterr().err
    texts = [p.read_text() for p in sorted(out.glob("*.cpp"))]
    texts += [p.read_text() for p in sorted((ROOT / "csrc" / "aten").rglob("*.cpp"))]
    sites = call_sites(texts)
    checked, bad = 0, []
    for name, fn in sorted(KERNELS.items()):
        if not inspect.isfunction(fn) or name not in sites:
            continue
        checked += 1
        bad += [f"{name} ({fn.__module__}): {m}" for m in mismatches(fn, sites[name])]
    assert checked > 450, checked  # the foreach closures included
    assert not bad, "\n".join(bad)


def test_the_comparison_sees_a_wrong_annotation():
    import torch

    def f(
        self: torch.Tensor, dim: int, out: torch.Tensor, dtype: torch.dtype | None = None
    ) -> None:
        pass

    ok = ([torch.Tensor, int, torch.Tensor], None)
    assert mismatches(f, [ok]) == []
    assert mismatches(f, [([torch.Tensor, list[int], torch.Tensor], None)]) == [
        f"dim: C++ passes {list[int]}, annotated {int}"
    ]
    assert mismatches(f, [([torch.Tensor, int | None, torch.Tensor], None)])  # optional
    assert mismatches(f, [([torch.Tensor], None)]) == [
        "dim: C++ does not pass it and it has no default",
        "out: C++ does not pass it and it has no default",
    ]
    assert mismatches(f, [([*ok[0]], torch.Tensor)])  # C++ wants a tensor back
    assert accepts(float, int) and accepts(int | None, bool) and not accepts(int, float)
    # What comes back: no wider than C++ takes, a tuple's tensors may be None (output_mask).
    T = torch.Tensor
    assert returns_fit(tuple[T | None, T], tuple[T, T])
    assert not returns_fit(tuple[T, T], tuple[T, T, T])
    assert not returns_fit(list[T] | None, list[T])  # the functional foreach must return
    assert not returns_fit(tuple[T, int | None], tuple[T, int])
    sites = call_sites(
        [
            "TORCH_IMPL_FUNC(X)(const at::Tensor & self, at::OptionalIntArrayRef dim, "
            "::std::optional<at::ScalarType> dtype, const at::Tensor & out) {\n"
            '  torch_ext::launch::call("k", self, dim, dtype, out);\n}\n',
            "::std::vector<at::Tensor> g(at::TensorList self, "
            "at::ArrayRef<at::Scalar> scalars) {\n"
            '  return torch_ext::launch::call<::std::vector<at::Tensor>>("v", self, scalars);\n}\n',
        ]
    )
    from torch_ext.ops._declare import Scalar

    assert sites == {
        "k": [([torch.Tensor, list[int] | None, torch.dtype | None, torch.Tensor], None)],
        "v": [([list[torch.Tensor], list[Scalar]], list[torch.Tensor])],
    }
