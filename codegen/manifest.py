"""Reading musa_functions.yaml: entries with their line numbers, nothing resolved yet."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from torchgen.gen import LineLoader

# Keys an entry may carry. The first four mean what they mean in PyTorch's
# native_functions.yaml (seed 002); the rest are ours.
SEED_KEYS = {"func", "dispatch", "structured_inherits", "precomputed"}
OUR_KEYS = {
    "triton",  # KERNELS name, or "pkg.module:attr", that computes the op
    "stub",  # Legacy: DispatchStub(s) to fill: a name (with triton:) or {stub: kernel}
    "fake",  # new ops: kernel computing output metadata on meta tensors
    "dtypes",  # element types the kernels take (by the first tensor argument): dtypes_of
}
KNOWN_KEYS = SEED_KEYS | OUR_KEYS
# New operators live in this library namespace.
NEW_OP_NAMESPACE = "torch_ext"


# `dtypes:` names groups or single element types; a call whose first tensor argument
# has another type raises NotImplementedError ("<op>" not implemented for 'Long'), as
# PyTorch's dispatch macros do, instead of running a kernel over a type it has no
# meaning for (layer_norm of integers). Without the key every type a Triton kernel can
# take is let through (csrc/aten/DtypeGuard.h).
DTYPE_GROUPS = {
    "floating": ("Half", "BFloat16", "Float", "Double"),
    "integral": ("Byte", "Char", "Short", "Int", "Long"),
    # complex types reach the op's own kernel (ops/_pointwise.py `complex_parts`), not
    # the CPU fallback (csrc/aten/DtypeGuard.h)
    "complex": ("ComplexFloat", "ComplexDouble"),
}
DTYPE_NAMES = {
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


class ManifestError(Exception):
    """A bad manifest. The message names the file, the line and the entry."""


@dataclass
class Entry:
    func: str  # "tril.out", "tril", or "torch_ext::name(schema) -> ..."
    line: int
    path: str
    keys: dict = field(default_factory=dict)

    @property
    def is_new_op(self) -> bool:
        return self.func.startswith(NEW_OP_NAMESPACE + "::")

    def dtypes(self) -> tuple[str, ...] | None:
        """The c10 ScalarType names `dtypes:` lets through, or None (the key is absent)."""
        v = self.keys.get("dtypes")
        if v is None:
            return None
        words = v if isinstance(v, list) else str(v).replace(",", " ").split()
        names: list[str] = []
        for w in words:
            w = str(w).strip()
            if w in DTYPE_GROUPS:
                names += DTYPE_GROUPS[w]
            elif w in DTYPE_NAMES:
                names.append(DTYPE_NAMES[w])
            else:
                known = ", ".join([*DTYPE_GROUPS, *DTYPE_NAMES])
                raise self.error(f"'dtypes:' names an unknown type '{w}' (known: {known})")
        if not names:
            raise self.error("'dtypes:' lets no type through")
        return tuple(dict.fromkeys(names))

    def where(self) -> str:
        return f"{self.path}:{self.line}: entry '{self.func}'"

    def error(self, msg: str) -> ManifestError:
        return ManifestError(f"{self.where()}: {msg}")


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)?$")


def load(path: str | Path) -> list[Entry]:
    path = Path(path)
    text = path.read_text()
    try:
        raw = yaml.load(text, Loader=LineLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        what = " ".join(str(getattr(e, "problem", None) or e).split())
        ctx, ctx_mark = getattr(e, "context", None), getattr(e, "context_mark", None)
        if ctx and ctx_mark is not None:
            what += f" ({ctx} at line {ctx_mark.line + 1})"
        raise ManifestError(f"{where}: not valid YAML: {what}") from None
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ManifestError(f"{path}: the manifest must be a YAML list of entries")
    entries = []
    for item in raw:
        if not isinstance(item, dict) or "func" not in item:
            line = item.get("__line__", "?") if isinstance(item, dict) else "?"
            raise ManifestError(f"{path}:{line}: every entry needs a 'func:' key")
        line = item.pop("__line__")
        for v in item.values():
            if isinstance(v, dict):
                v.pop("__line__", None)
        e = Entry(func=str(item.pop("func")).strip(), line=line, path=str(path), keys=item)
        for k in e.keys:
            if k not in KNOWN_KEYS:
                raise e.error(
                    f"unknown key '{k}' (known: {', '.join(sorted(KNOWN_KEYS - {'func'}))})"
                )
        e.dtypes()  # a bad 'dtypes:' is reported with the other manifest errors
        if not e.is_new_op and not _NAME.match(e.func):
            raise e.error(
                "expected an aten operator name such as 'tril.out', or "
                f"'{NEW_OP_NAMESPACE}::name(schema) -> ...' for a new operator"
            )
        entries.append(e)
    return entries
