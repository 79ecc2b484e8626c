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

    @property
    def takes_iterator(self) -> bool:
        return bool(self.params) and re.search(r"\bTensorIterator(Base)?\s*&", self.params[0].type) is not None


_USING = re.compile(r"using\s+(\w+)\s*=\s*void\s*\(\s*\*\s*\)\s*\((.*?)\)\s*;", re.S)
_TYPEDEF = re.compile(r"typedef\s+void\s*\(\s*\*\s*(\w+)\s*\)\s*\((.*?)\)\s*;", re.S)
_DECLARE = re.compile(r"DECLARE_DISPATCH\(\s*([\w:<>, ]+?)\s*,\s*(\w+)\s*\)")
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
    fn_types: dict[str, str] = {}
    declared: list[tuple[str, str, str]] = []
    for h in sorted(native.rglob("*.h")):
        text = h.read_text(errors="replace")
        if "DispatchStub" not in text and "void" not in text:
            continue
        for m in _USING.finditer(text):
            fn_types.setdefault(m.group(1), m.group(2))
        for m in _TYPEDEF.finditer(text):
            fn_types.setdefault(m.group(1), m.group(2))
        for m in _DECLARE.finditer(text):
            declared.append((m.group(1).strip(), m.group(2), str(h.relative_to(include))))
    stubs = {}
    for fn_type, name, header in declared:
        params_text = fn_types.get(fn_type.split("::")[-1])
        if params_text is None:
            continue  # a signature we cannot read; such a stub is filled by hand
        params = tuple(_param(p, i) for i, p in enumerate(_split_params(params_text)))
        stubs[name] = Stub(name, fn_type, header, params)
    return stubs
