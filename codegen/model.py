"""Resolving manifest entries against the installed torch's native_functions.yaml.

The result is a list of `Op`s (one per structured group, plain function or new
operator) in torchgen's own model objects, with the mode decided:

  Legacy      names only; PyTorch's device-generic at::native impl class
  LegacyMeta  dispatch: {PrivateUse1: Name}; our impl class over at::meta
  Customized  LegacyMeta + structured_inherits/precomputed; our meta class too
  Plain       a non-structured aten op with dispatch: {PrivateUse1: name}
  New         an operator of our own library (torch_ext::name(schema))

Rule for structured groups: the group is the unit. Naming any member of a
group registers every member PyTorch has (functional, in-place, out); the
mode keys (dispatch, structured_inherits, precomputed, triton, stub) go on
the out entry, where seed 002 puts them. The one exception: a member given
its own `dispatch:` while the out entry is not named is registered alone, as a
Plain (non-structured) kernel.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torchgen
from torchgen.gen import get_grouped_native_functions, parse_native_yaml
from torchgen.model import (
    DispatchKey,
    FunctionSchema,
    NativeFunction,
    NativeFunctionsGroup,
    Precompute,
)

from .manifest import NEW_OP_NAMESPACE, Entry
from .stubs import all_stubs

OUR_KEY = "PrivateUse1"


@dataclass
class Op:
    mode: str
    entries: list[Entry]
    structured: bool = False
    # aten ops
    group: NativeFunctionsGroup | None = None
    functions: list[NativeFunction] = field(default_factory=list)
    impl_class: str = ""  # qualified structured impl class, or plain kernel function
    kernel: str = ""  # unqualified name from dispatch: (LegacyMeta/Customized/Plain)
    meta_class: str = ""  # qualified meta class
    # where the body comes from
    triton: str | None = None
    stubs: dict[str, str] = field(default_factory=dict)  # stub -> kernel (generated fills)
    handwritten: bool = False
    # new ops
    schema: FunctionSchema | None = None
    fake: str | None = None

    @property
    def name(self) -> str:
        if self.schema is not None:
            return f"{NEW_OP_NAMESPACE}::{self.schema.name}"
        if self.structured:
            return str(self.group.out.func.name)
        return str(self.functions[0].func.name)

    @property
    def line(self) -> int:
        return min(e.line for e in self.entries)

    def body_source(self) -> str:
        if self.mode == "Legacy":
            fills = ", ".join(f"{s} <- {k}" for s, k in self.stubs.items())
            return (
                f"PyTorch impl; fills {fills}"
                if fills
                else "PyTorch impl; its stubs are filled by another entry or by C++"
            )
        if self.handwritten:
            return "hand-written C++"
        return f"generated Triton call '{self.triton}'"


@dataclass
class NativeDb:
    functions: dict[str, NativeFunction]
    group_of: dict[str, NativeFunctionsGroup]
    backend_indices: dict


@functools.lru_cache(maxsize=None)
def native_db() -> NativeDb:
    d = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native"
    parsed = parse_native_yaml(str(d / "native_functions.yaml"), str(d / "tags.yaml"))
    functions = {str(f.func.name): f for f in parsed.native_functions}
    group_of = {}
    for g in get_grouped_native_functions(parsed.native_functions):
        if isinstance(g, NativeFunctionsGroup):
            for f in g.functions():
                group_of[str(f.func.name)] = g
    return NativeDb(functions, group_of, parsed.backend_indices)


@functools.lru_cache(maxsize=None)
def _libtorch_cpu_symbols() -> str:
    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    return subprocess.run(
        ["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True
    ).stdout


@functools.lru_cache(maxsize=None)
def exported_impl_classes() -> frozenset[str]:
    """at::native::structured_* classes whose impl() libtorch_cpu defines."""
    return frozenset(re.findall(r"_ZN2at6native\d+(structured_\w+?)4impl", _libtorch_cpu_symbols()))


@functools.lru_cache(maxsize=None)
def exported_native_functions() -> frozenset[str]:
    """Plain at::native:: functions libtorch_cpu defines."""
    syms = _libtorch_cpu_symbols()
    out = set()
    for m in re.finditer(r"_ZN2at6native(\d+)", syms):
        n = int(m.group(1))
        out.add(syms[m.end() : m.end() + n])
    return frozenset(out)


def db_kernel(key: DispatchKey, f: NativeFunction) -> str | None:
    m = native_db().backend_indices[key].get_kernel(f)
    return m.kernel if m is not None else None


def _lookup(e: Entry) -> NativeFunction:
    db = native_db()
    f = db.functions.get(e.func)
    if f is None:
        close = difflib.get_close_matches(e.func, db.functions.keys(), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise e.error(
            f"unknown operator or overload '{e.func}' in this torch ({torch.__version__}){hint}"
        )
    return f


def _derived_kernel(e: Entry, structured: bool) -> str | None:
    """The dispatch name an entry with `triton:` and neither `dispatch:` nor `stub:`
    gets: its body is ours, so it names its impl after the op (TritonTrilOut for the
    structured tril.out, triton_mv_out for the plain mv.out). Spelling `dispatch:` beside
    `triton:` (seed 002's form) stays valid and names it explicitly."""
    if "triton" not in e.keys or "stub" in e.keys or "dispatch" in e.keys:
        return None
    base = e.func.replace(".", "_")
    if structured:
        return "Triton" + "".join(w[:1].upper() + w[1:] for w in base.split("_") if w)
    return f"triton_{base}"


def _dispatch_kernel(e: Entry, structured: bool = False, derive: bool = True) -> str | None:
    d = e.keys.get("dispatch")
    if d is None:
        return _derived_kernel(e, structured) if derive else None
    if not isinstance(d, dict) or not d:
        raise e.error("'dispatch:' must be a mapping such as {PrivateUse1: MyKernel}")
    for key in d:
        if key != OUR_KEY:
            known = hasattr(DispatchKey, str(key))
            what = "is not this backend's key" if known else "is an unknown dispatch key"
            raise e.error(f"'{key}' {what}; this backend registers only '{OUR_KEY}'")
    name = d[OUR_KEY]
    if not isinstance(name, str) or not re.match(r"^[A-Za-z_]\w*$", name):
        raise e.error(f"dispatch kernel name '{name}' is not a C++ identifier")
    return name


class Scan:
    """What the hand-written C++ defines (bodies there always win)."""

    def __init__(self, dirs: list[str]):
        text = ""
        for d in dirs:
            for p in sorted(Path(d).rglob("*.cpp")) if Path(d).is_dir() else []:
                text += p.read_text(errors="replace") + "\n"
        self.impl_funcs = set(re.findall(r"TORCH_IMPL_FUNC\(\s*(\w+)\s*\)", text))
        self.meta_funcs = set(re.findall(r"TORCH_(?:PRECOMPUTE_)?META_FUNC2?\(\s*(\w+)", text))
        self.stub_fills = set(re.findall(r"REGISTER_PRIVATEUSE1_DISPATCH\(\s*(\w+)", text))
        self._text = text

    def defines_function(self, name: str) -> bool:
        return re.search(rf"[\w>&*]\s+{name}\s*\([^;{{]*\)\s*\{{", self._text) is not None


def _stub_map(e: Entry) -> dict[str, str]:
    stub = e.keys.get("stub")
    if stub is None:
        return {}
    if isinstance(stub, str):
        if "triton" not in e.keys:
            raise e.error(f"'stub: {stub}' needs 'triton:' naming the kernel that fills it")
        mapping = {stub: e.keys["triton"]}
    elif isinstance(stub, dict):
        mapping = {str(k): str(v) for k, v in stub.items()}
    else:
        raise e.error("'stub:' must be a stub name or a mapping {stub: kernel}")
    known = all_stubs()
    for s in mapping:
        if s not in known:
            close = difflib.get_close_matches(s, known.keys(), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise e.error(f"no DispatchStub named '{s}' in torch's ATen/native headers{hint}")
    return mapping


def _legacy_impl_class(e: Entry, g: NativeFunctionsGroup) -> str:
    db = native_db()
    cpu = db.backend_indices[DispatchKey.CPU].get_kernel(g.out)
    cuda = db.backend_indices[DispatchKey.CUDA].get_kernel(g.out)
    name = None
    if g.out.ufunc_inner_loop and cpu is not None:
        name = cpu.kernel  # ufunc_<op>_CPU: the generic class, it dispatches on device_type()
    elif cpu is not None and cuda is not None and cpu.kernel == cuda.kernel:
        name = cpu.kernel
    if name is None or f"structured_{name}" not in exported_impl_classes():
        detail = (
            f"PyTorch implements {g.out.func.name} separately for CPU and CUDA "
            f"({cpu.kernel if cpu else '-'} / {cuda.kernel if cuda else '-'})"
            if name is None
            else f"at::native::structured_{name}::impl is not exported by libtorch_cpu"
        )
        raise e.error(
            f"Legacy mode needs PyTorch's device-generic impl class, but {detail}; "
            f"use LegacyMeta instead: give the out entry "
            f"'dispatch: {{{OUR_KEY}: <Name>}}' and a body (triton: or TORCH_IMPL_FUNC(<Name>))"
        )
    return f"at::native::structured_{name}"


def _check_triton(e: Entry, kernel_exists) -> str | None:
    t = e.keys.get("triton")
    if t is None:
        return None
    if not isinstance(t, str):
        raise e.error("'triton:' must name one kernel")
    if not kernel_exists(t):
        raise e.error(
            f"'triton: {t}' names no kernel (not declared with @kernel in torch_ext/ops, "
            "and not an importable 'module:attribute')"
        )
    return t


def resolve(entries: list[Entry], namespace: str, scan: Scan, kernel_exists) -> list[Op]:
    db = native_db()
    seen: dict[str, Entry] = {}
    for e in entries:
        key = e.func.split("(")[0]
        if key in seen:
            raise e.error(f"duplicate entry (first at line {seen[key].line})")
        seen[key] = e

    ops: list[Op] = []
    by_group: dict[int, list[Entry]] = {}
    groups: dict[int, NativeFunctionsGroup] = {}
    for e in entries:
        if e.is_new_op:
            ops.append(_resolve_new(e, scan, kernel_exists))
            continue
        f = _lookup(e)
        g = db.group_of.get(e.func)
        lone_member = (
            g is not None
            and g.structured
            and ("dispatch" in e.keys or ("triton" in e.keys and "stub" not in e.keys))
            and e.func != str(g.out.func.name)
            and not any(x.func == str(g.out.func.name) for x in entries)
        )
        if g is not None and g.structured and not lone_member:
            by_group.setdefault(id(g), []).append(e)
            groups[id(g)] = g
        else:
            ops.append(_resolve_plain(e, f, g, namespace, scan, kernel_exists))

    for gid, es in by_group.items():
        ops.append(_resolve_structured(groups[gid], es, namespace, scan, kernel_exists))
    ops.sort(key=lambda o: o.line)
    return ops


def _resolve_structured(g, es, namespace, scan, kernel_exists) -> Op:
    out_name = str(g.out.func.name)
    out_entry = next((e for e in es if e.func == out_name), None)
    for e in es:
        if e is not out_entry and e.keys:
            raise e.error(
                f"'{', '.join(e.keys)}' belongs on the out entry '{out_name}' "
                f"(the structured group is implemented once, on its out variant)"
            )
    e = out_entry or es[0]
    keys = e.keys
    kernel = _dispatch_kernel(e, structured=True)
    inherits = keys.get("structured_inherits")
    precomputed = keys.get("precomputed")
    triton = _check_triton(e, kernel_exists)
    stubs = _stub_map(e)
    meta_name = torchgen.api.meta.name(g)
    functions = list(g.functions())

    if kernel is None:
        if inherits is not None or precomputed is not None:
            raise e.error(
                "'structured_inherits'/'precomputed' (Customized mode) need "
                f"'dispatch: {{{OUR_KEY}: <Name>}}' naming the impl class"
            )
        impl = _legacy_impl_class(e, g)
        if triton is not None and not stubs:
            raise e.error(
                "a Legacy entry's Triton kernel fills a DispatchStub: add 'stub: <stub name>'"
            )
        for s in list(stubs):
            if s in scan.stub_fills:
                del stubs[s]  # hand-written REGISTER_PRIVATEUSE1_DISPATCH wins
        return Op(
            "Legacy",
            es,
            structured=True,
            group=g,
            functions=functions,
            impl_class=impl,
            kernel=impl.split("::")[-1][len("structured_") :],
            stubs=stubs,
            meta_class=f"at::meta::structured_{meta_name}",
        )
    if stubs:
        raise e.error("'stub:' is for Legacy entries (no dispatch:); here the impl body is ours")

    mode = "LegacyMeta"
    if inherits is not None or precomputed is not None:
        mode = "Customized"
        try:
            pre = Precompute.parse(precomputed) if precomputed is not None else None
            if pre is not None:
                names = {a.name for a in g.out.func.arguments.flat_all}
                for old in pre.replace:
                    if old not in names:
                        raise ValueError(f"'{old}' is not an argument of {out_name}")
        except (AssertionError, ValueError) as ex:  # torchgen asserts on bad syntax
            raise e.error(f"bad 'precomputed:' {precomputed!r}: {ex}") from None
        new_out = dataclasses.replace(g.out, structured_inherits=inherits, precomputed=pre)
        g = NativeFunctionsGroup(
            functional=g.functional, inplace=g.inplace, mutable=g.mutable, out=new_out
        )
        functions = list(g.functions())
        meta_class = f"{namespace}::structured_{meta_name}"
        meta_fn = meta_name
        if meta_fn not in scan.meta_funcs:
            macro = "TORCH_PRECOMPUTE_META_FUNC" if pre is not None else "TORCH_META_FUNC"
            raise e.error(
                f"Customized mode needs a hand-written {macro}({meta_fn}) "
                f"in namespace {namespace} (csrc/aten/)"
            )
    else:
        meta_class = f"at::meta::structured_{meta_name}"
    handwritten = kernel in scan.impl_funcs
    if not handwritten and triton is None:
        raise e.error(
            f"no body for {kernel}: add 'triton: <kernel>' or write "
            f"TORCH_IMPL_FUNC({kernel}) in namespace {namespace} (csrc/aten/)"
        )
    return Op(
        mode,
        es,
        structured=True,
        group=g,
        functions=functions,
        impl_class=f"{namespace}::structured_{kernel}",
        kernel=kernel,
        meta_class=meta_class,
        triton=triton,
        handwritten=handwritten,
    )


def _resolve_plain(e, f, g, namespace, scan, kernel_exists) -> Op:
    for k in ("structured_inherits", "precomputed"):
        if k in e.keys:
            raise e.error(
                f"'{k}' is only for structured ops, and {e.func} is not structured "
                "in PyTorch; register it with 'dispatch:' alone"
            )
    kernel = _dispatch_kernel(e)
    if kernel is None:
        # Legacy for a non-structured op: PyTorch's one at::native kernel for
        # CPU and CUDA, which reaches the device through its DispatchStubs.
        cpu = db_kernel(DispatchKey.CPU, f)
        cuda = db_kernel(DispatchKey.CUDA, f)
        if cpu is None or cpu != cuda or cpu not in exported_native_functions():
            raise e.error(
                f"{e.func} is not structured in PyTorch and has no device-generic "
                f"at::native kernel (CPU: {cpu or '-'}, CUDA: {cuda or '-'}): give it "
                f"'dispatch: {{{OUR_KEY}: <kernel>}}' and a body (triton: or C++)"
            )
        if "triton" in e.keys and "stub" not in e.keys:
            raise e.error(
                "a Legacy entry's Triton kernel fills a DispatchStub: add 'stub: <stub name>'"
            )
        _check_triton(e, kernel_exists)
        stubs = {s: k for s, k in _stub_map(e).items() if s not in scan.stub_fills}
        return Op(
            "Legacy",
            [e],
            group=g,
            functions=[f],
            impl_class=f"at::native::{cpu}",
            kernel=cpu,
            stubs=stubs,
        )
    if "stub" in e.keys:
        raise e.error("'stub:' is for Legacy entries (no dispatch:); here the body is ours")
    triton = _check_triton(e, kernel_exists)
    handwritten = scan.defines_function(kernel)
    if not handwritten and triton is None:
        raise e.error(
            f"no body for {kernel}: add 'triton: <kernel>' or define "
            f"{namespace}::{kernel} in csrc/aten/"
        )
    return Op(
        "Plain",
        [e],
        group=g,
        functions=[f],
        impl_class=f"{namespace}::{kernel}",
        kernel=kernel,
        triton=triton,
        handwritten=handwritten,
    )


def _resolve_new(e, scan, kernel_exists) -> Op:
    text = e.func[len(NEW_OP_NAMESPACE) + 2 :]
    try:
        schema = FunctionSchema.parse(text)
    except Exception as ex:
        raise e.error(f"cannot parse the schema: {ex}") from None
    for k in ("structured_inherits", "precomputed", "stub"):
        if k in e.keys:
            raise e.error(f"'{k}' does not apply to a new operator")
    kernel = _dispatch_kernel(e, derive=False) or str(schema.name).replace(".", "_")
    triton = _check_triton(e, kernel_exists)
    handwritten = scan.defines_function(kernel)
    if not handwritten and triton is None:
        raise e.error(f"no body: add 'triton: <kernel>' or define {kernel} in csrc/aten/")
    fake = e.keys.get("fake")
    if fake is None:
        raise e.error(
            "a new operator needs 'fake: <kernel>' computing its outputs on meta "
            "tensors (used by FakeTensor and torch.compile)"
        )
    if not kernel_exists(fake):
        raise e.error(f"'fake: {fake}' names no kernel")
    return Op(
        "New", [e], schema=schema, kernel=kernel, triton=triton, handwritten=handwritten, fake=fake
    )
