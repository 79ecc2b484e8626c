"""PyTorch's DispatchStubs and their C++ signatures, read from the installed headers."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class StubParam:
    type: str
    name: str


@dataclass(frozen=True)
class Stub:
    name: str  # e.g. lerp_kernel_scalar_weight
    fn_type: str  # e.g. lerp_fn_scalar
    header: str  # e.g. ATen/native/Lerp.h
    params: tuple[StubParam, ...]
    # "void", or "at::Tensor&" for a stub that returns the tensor it was handed as its
    # first argument (orgqr_stub: Tensor& (*)(Tensor& result, const Tensor& tau))
    returns: str = "void"

    @property
    def takes_iterator(self) -> bool:
        return (
            bool(self.params)
            and re.search(r"\bTensorIterator(Base)?\s*&", self.params[0].type) is not None
        )


_RET = r"(void|(?:at::)?Tensor\s*&)"
_USING = re.compile(r"using\s+(\w+)\s*=\s*" + _RET + r"\s*\(\s*\*\s*\)\s*\((.*?)\)\s*;", re.S)
_TYPEDEF = re.compile(r"typedef\s+" + _RET + r"\s*\(\s*\*\s*(\w+)\s*\)\s*\((.*?)\)\s*;", re.S)
_NAMESPACE = re.compile(r"namespace\s+([\w:]+)\s*\{")


def _declarations(text: str):
    """(fn type or inline signature, stub name, offset) of each DECLARE_DISPATCH."""
    for m in re.finditer(r"DECLARE_DISPATCH\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        args = _split_params(text[m.end() : i - 1])
        if len(args) == 2 and re.match(r"^\w+$", args[1]):
            yield args[0], args[1], m.start()


def _in_native_namespace(text: str, offset: int) -> bool:
    """Whether `offset` lies directly in namespace at::native (not a nested one)."""
    stack = []  # one entry per open brace: a namespace name or None
    for m in re.finditer(r"namespace\s+([\w:]+)\s*\{|namespace\s*\{|\{|\}", text[:offset]):
        tok = m.group(0)
        if tok == "}":
            if stack:
                stack.pop()
        elif tok.startswith("namespace"):
            stack.append(m.group(1) or "")
        else:
            stack.append(None)
    names = [n for n in stack if n is not None]
    return bool(names) and names[-1].split("::")[-1] == "native"


_INLINE = re.compile(r"^" + _RET + r"\s*\(\s*\*\s*\)\s*\((.*)\)$", re.S)
_NON_NAMES = {"const", "unsigned", "signed", "long", "short", "struct", "volatile"}


def _split_params(text: str) -> list[str]:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [" ".join(p.split()) for p in out if p.strip() and p.strip() != "void"]


def _param(text: str, i: int) -> StubParam:
    text = text.split("=")[0].strip()
    m = re.match(r"^(.*[\s&*>])([A-Za-z_]\w*)$", text)
    if m and m.group(1).strip() and m.group(1).strip() not in _NON_NAMES:
        return StubParam(m.group(1).strip(), f"a{i}")
    return StubParam(text, f"a{i}")


@functools.lru_cache(maxsize=None)
def all_stubs() -> dict[str, Stub]:
    include = Path(torch.__file__).parent / "include"
    native = include / "ATen" / "native"
    fn_types: dict[str, tuple[str, str]] = {}  # fn type -> (return type, parameters)
    local_types: dict[str, dict[str, tuple[str, str]]] = {}
    declared = []
    for h in sorted(native.rglob("*.h")):
        text = h.read_text(errors="replace")
        if "DECLARE_DISPATCH" not in text and "void" not in text:
            continue
        header = str(h.relative_to(include))
        here = local_types.setdefault(header, {})
        for m in _USING.finditer(text):
            fn_types.setdefault(m.group(1), (m.group(2), m.group(3)))
            here[m.group(1)] = (m.group(2), m.group(3))
        for m in _TYPEDEF.finditer(text):
            fn_types.setdefault(m.group(2), (m.group(1), m.group(3)))
            here[m.group(2)] = (m.group(1), m.group(3))
        for fn_type, name, offset in _declarations(text):
            # Stubs of nested namespaces (at::native::cpublas::copy_stub) are not ours to fill.
            if _in_native_namespace(text, offset):
                declared.append((fn_type, name, header))
    stubs = {}
    for fn_type, name, header in declared:
        inline = _INLINE.match(fn_type)
        if inline:
            ret, params_text = inline.group(1), inline.group(2)
        else:
            short = fn_type.split("::")[-1]
            ret, params_text = local_types[header].get(short, fn_types.get(short, (None, None)))
        if params_text is None:
            continue  # a signature we cannot read; such a stub is filled by hand
        params = tuple(_param(p, i) for i, p in enumerate(_split_params(params_text)))
        if ret != "void":  # returns a Tensor&: the first parameter, a mutable Tensor&
            if not params or not re.fullmatch(r"(at::)?Tensor\s*&", params[0].type):
                continue
            ret = "at::Tensor&"
        stubs.setdefault(name, Stub(name, fn_type, header, params, ret))
    return stubs
