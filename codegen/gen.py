"""Emitting C++ for resolved ops: N registration shards, each with its own header of
declarations, the new-op library with its own, and one header including them all for
hand-written C++ (a YAML change recompiles only the shards whose ops it touches). An op
with a hand-written body also has a header of its own declarations (op_header), which
its shard's header includes: C++ that includes only the headers of the ops it defines
recompiles only when one of those entries changes.

torchgen writes the structured functional/inplace/out classes and the
dispatcher wrappers (dest.RegisterDispatchKey / StructuredRegisterDispatchKey);
we subclass it only where it refuses PrivateUse1 (functional outputs, device
guard). Bodies and stub fills that the manifest asks for are ours.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import textwrap

from torchgen import local
from torchgen.api import cpp, structured
from torchgen.api.types import NativeSignature, kernel_signature
from torchgen.context import native_function_manager
from torchgen.dest.register_dispatch_key import (
    RegisterDispatchKey,
    StructuredRegisterDispatchKey,
)
from torchgen.gen import compute_meta_function_declaration
from torchgen.model import BackendIndex, BackendMetadata, DispatchKey, SchemaKind
from torchgen.selective_build.selector import SelectiveBuilder
from torchgen.utils import Target

from .model import Op
from .stubs import all_stubs

SHARDS = 8
HEADER = "MusaFunctions.h"  # every declaration: includes the parts below
NEW_HEADER = "MusaFunctions_new.h"  # the brand-new ops'


def shard_header(i: int) -> str:
    """The header of shard i's declarations (the only one the shard includes)."""
    return f"MusaFunctions_{i}.h"


def op_header(op: Op) -> str:
    """The header of one hand-written op's declarations, by its kernel's name
    (`#include "MusaFunctions_TritonGlu.h"` in the C++ that defines TritonGlu)."""
    return f"MusaFunctions_{op.kernel}.h"


GUARD_SETUP = """auto current_device = guard_.current_device();
if (C10_UNLIKELY(current_device.has_value())) {
  TORCH_INTERNAL_ASSERT(*current_device == options.device(),
    "structured kernels don't support multi-device outputs");
} else {
  guard_.reset_device(options.device());
}
"""


@dataclasses.dataclass(frozen=True)
class PrivateUse1StructuredGen(StructuredRegisterDispatchKey):
    """torchgen's structured emitter, taught to allocate functional outputs
    through the dispatcher (our empty_strided) and to guard the device."""

    def gen_class_set_output_body(self, k: SchemaKind, maybe_create_proxy: bool) -> str:
        if k is SchemaKind.functional:
            return GUARD_SETUP + "outputs_[output_idx] = create_out(sizes, strides, options);"
        return GUARD_SETUP + super().gen_class_set_output_body(k, maybe_create_proxy)

    def gen_class(self, f, k, *, class_name, parent_class, generate_super) -> str:
        text = super().gen_class(
            f, k, class_name=class_name, parent_class=parent_class, generate_super=generate_super
        )
        end = text.rstrip().rfind("};")
        return text[:end] + "    c10::OptionalDeviceGuard guard_;\n};\n"


def backend_index(op: Op, namespace: str) -> BackendIndex:
    index = {}
    ns = "at::native" if op.mode == "Legacy" else namespace
    for f in op.functions:
        index[f.func.name] = BackendMetadata(
            kernel=op.kernel, structured=op.structured, cpp_namespace=ns
        )
    return BackendIndex(
        dispatch_key=DispatchKey.PrivateUse1,
        use_out_as_primary=True,
        external=False,
        device_guard=True,
        index=index,
    )


def _dispatch_gen(op: Op, namespace: str, target: Target):
    bi = backend_index(op, namespace)
    common = dict(
        backend_index=bi,
        target=target,
        selector=SelectiveBuilder.get_nop_selector(),
        rocm=False,
        symint=False,
        class_method_name=None,
        skip_dispatcher_op_registration=False,
    )
    if not op.structured:
        return lambda f: RegisterDispatchKey(**common).gen_unstructured(f, None)
    return PrivateUse1StructuredGen(**common, g=op.group).gen_one


def _call_kernel(triton: str, ret: str, args: list[str], returned: list[str]) -> str:
    """C++ statements calling a Triton kernel through the launcher and returning `ret`."""
    call_args = ", ".join([f'"{triton}"', *args])
    if ret == "void":
        return f"torch_ext::launch::call({call_args});"
    if ret.endswith("&") or (ret.startswith("::std::tuple<") and "&" in ret):
        back = (
            returned[0] if len(returned) == 1 else f"::std::forward_as_tuple({', '.join(returned)})"
        )
        return f"torch_ext::launch::call({call_args});\nreturn {back};"
    return f"return torch_ext::launch::call<{ret}>({call_args});"


def _includes(op: Op) -> set[str]:
    inc = set()
    for f in op.functions:
        root = f.root_name
        inc.add(f"ATen/ops/{root}_native.h")
        if op.structured:
            inc.add(f"ATen/ops/{root}_meta.h")
    for s in op.stubs:
        inc.add(all_stubs()[s].header)
    return inc


def emit_umbrella() -> str:
    """HEADER: every part, for hand-written C++ that defines any op's body."""
    parts = [shard_header(i) for i in range(SHARDS)] + [NEW_HEADER]
    inc = "\n".join(f'#include "{p}"' for p in parts)
    return f"""// Generated by `python -m codegen` from the op manifest. Do not edit.
#pragma once
{inc}
"""


def emit_header(
    ops: list[Op], namespace: str, meta_bases: str | None, headers: tuple[str, ...] = ()
) -> str:
    """Declarations of `ops`, after includes of the generated `headers` (other ops')."""
    includes, decls = set(), []
    local_inc = "".join(f'#include "{h}"\n' for h in headers)
    for op in ops:
        if op.mode == "New":
            with _new_op_context():
                sig = NativeSignature(op.schema, prefix="", symint=False)
                decls.append(f"{sig.decl(name=op.kernel)};")
            continue
        includes |= {i for i in _includes(op) if i.endswith("_meta.h")}
        if op.mode == "Customized":
            g = op.group
            with native_function_manager(g.out):
                decls.append(compute_meta_function_declaration(g))
        if op.mode in ("LegacyMeta", "Customized"):
            g = op.group
            with native_function_manager(g.out):
                args = ", ".join(a.decl() for a in structured.impl_arguments(g))
            decls.append(
                f"struct TORCH_API structured_{op.kernel} : public {op.meta_class} {{\n"
                f"  void impl({args});\n}};"
            )
        elif op.mode == "Plain":
            bi = backend_index(op, namespace)
            for f in op.functions:
                with native_function_manager(f):
                    decls.append(f"TORCH_API {kernel_signature(f, bi).decl(name=op.kernel)};")
    inc = "\n".join(f"#include <{i}>" for i in sorted(includes))
    # the Customized classes' bases, only where a Customized op needs them
    customized = any(op.mode == "Customized" for op in ops)
    bases = f'#include "{meta_bases}"\n' if meta_bases and customized else ""
    body = "\n\n".join(decls)
    return f"""// Generated by `python -m codegen` from the op manifest. Do not edit.
#pragma once
#include <ATen/TensorMeta.h>
#include <ATen/core/Tensor.h>
{inc}
{bases}{local_inc}
namespace {namespace} {{

{body}

}} // namespace {namespace}
"""


def _new_op_context():
    """torchgen's per-function settings for a new operator's C++ signature (no
    NativeFunction to take them from): mutable tensors as `Tensor &`, tensor lists as
    `TensorList`, as native_functions.yaml's defaults give them."""
    return local.parametrize(
        use_const_ref_for_mutable_tensors=False, use_ilistref_for_tensor_lists=False
    )


def _bodies(op: Op, namespace: str) -> str:
    """Generated bodies for entries that name a Triton kernel and have no C++ body."""
    if op.handwritten or op.triton is None or op.mode == "Legacy":
        return ""
    if op.mode in ("LegacyMeta", "Customized"):
        g = op.group
        with native_function_manager(g.out):
            args = structured.impl_arguments(g)
        decl = ", ".join(a.decl() for a in args)
        if g.out.structured_inherits == "TensorIteratorBase":
            # The meta built a TensorIterator (this object): hand it to a
            # TensorIterator kernel with the non-tensor arguments as extras.
            extra = "".join(f", {a.name}" for a in args if "Tensor" not in a.type)
            call = f'torch_ext::launch::pointwise_call(*this, "{op.triton}"{extra});'
        else:
            call = _call_kernel(op.triton, "void", [a.name for a in args], [])
        return f"TORCH_IMPL_FUNC({op.kernel})({decl}) {{\n  {call}\n}}\n"
    if op.mode == "New":
        with _new_op_context():
            sig = NativeSignature(op.schema, prefix="", symint=False)
            ret = sig.returns_type().cpp_type()
            returned = [a.name for a in op.schema.arguments.out] or [
                a.name
                for a in op.schema.arguments.flat_all
                if a.annotation and a.annotation.is_write
            ]
            call = _call_kernel(op.triton, ret, [a.name for a in sig.arguments()], returned)
            return f"{sig.defn(name=op.kernel)} {{\n{textwrap.indent(call, '  ')}\n}}\n"
    bi = backend_index(op, namespace)
    out = []
    for f in op.functions:
        with native_function_manager(f):
            sig = kernel_signature(f, bi)
            ret = sig.returns_type().cpp_type()
            call = _call_kernel(
                op.triton, ret, [a.name for a in sig.arguments()], list(cpp.return_names(f))
            )
            out.append(f"{sig.defn(name=op.kernel)} {{\n{textwrap.indent(call, '  ')}\n}}\n")
    return "\n".join(out)


def _stub_fills(op: Op) -> tuple[str, str]:
    fns, regs = [], []
    for stub_name, kern in op.stubs.items():
        stub = all_stubs()[stub_name]
        params = ", ".join(f"{p.type} {p.name}" for p in stub.params)
        names = [p.name for p in stub.params]
        fn = f"privateuse1_{stub_name}"
        if stub.takes_iterator:
            extra = "".join(f", {n}" for n in names[1:])
            body = f'torch_ext::launch::pointwise_call({names[0]}, "{kern}"{extra});'
        else:
            body = _call_kernel(kern, stub.returns, names, names[:1])
        fns.append(f"{stub.returns} {fn}({params}) {{\n{textwrap.indent(body, '  ')}\n}}")
        regs.append(f"REGISTER_PRIVATEUSE1_DISPATCH({stub_name}, &{fn})")
    return "\n".join(fns), "\n".join(regs)


_REGISTRATION = re.compile(r'm\.impl\("([^"]+)",\s*TORCH_FN\((\w+)\)\);')


def _guarded(registration: str, dtypes: tuple[str, ...] | None = None) -> str:
    """Registers a wrapper through DtypeGuard (csrc/aten/DtypeGuard.h), so that
    element types no kernel takes go to the CPU fallback instead, and those the op's
    `dtypes:` leaves out raise NotImplementedError."""
    allowed = ""
    if dtypes:
        bits = " | ".join(f"torch_ext::aten::bit(c10::ScalarType::{t})" for t in dtypes)
        allowed = f", ({bits})"
    return _REGISTRATION.sub(
        rf'm.impl("\1", TORCH_FN((torch_ext::aten::DtypeGuard<"\1", &\2{allowed}>::call)));',
        registration,
    )


def _op_dtypes(op: Op) -> tuple[str, ...] | None:
    """The op's `dtypes:` (its entries must agree where several give one)."""
    given = {e.dtypes() for e in op.entries} - {None}
    if len(given) > 1:
        first = min((e for e in op.entries if e.dtypes()), key=lambda e: e.line)
        raise first.error("the entries of one op give different 'dtypes:'")
    return given.pop() if given else None


def shard_of(op: Op) -> int:
    return int(hashlib.sha1(op.name.encode()).hexdigest(), 16) % SHARDS


def emit_shard(ops: list[Op], namespace: str, header: str) -> str:
    """Shard C++ registering `ops`, including `header` (shard_header: its own ops'
    declarations only)."""
    includes, bodies, wrappers, regs, stub_fns, stub_regs = set(), [], [], [], [], []
    for op in ops:
        includes |= _includes(op)
        bodies.append(_bodies(op, namespace))
        gen_def = _dispatch_gen(op, namespace, Target.ANONYMOUS_DEFINITION)
        gen_reg = _dispatch_gen(op, namespace, Target.REGISTRATION)
        for f in op.functions:
            w = gen_def(f)
            r = gen_reg(f)
            if w:
                wrappers.append(w)
            if r:
                regs.append(_guarded(r.strip(), _op_dtypes(op)))
        fns, rs = _stub_fills(op)
        if fns:
            stub_fns.append(fns)
            stub_regs.append(rs)
    inc = "\n".join(f"#include <{i}>" for i in sorted(includes))
    stub_part = ""
    if stub_fns:
        stub_part = (
            "namespace at::native {\nnamespace {\n"
            + "\n\n".join(stub_fns)
            + "\n} // namespace\n"
            + "\n".join(stub_regs)
            + "\n} // namespace at::native\n"
        )
    reg_block = "\n".join("  " + r.replace("\n", " ") for r in regs)
    return f"""// Generated by `python -m codegen` from the op manifest. Do not edit.
#include <ATen/core/Tensor.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/ops/_copy_from.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>
{inc}

#include "{header}"
#include "aten/DtypeGuard.h"
#include "aten/StructuredHelpers.h"
#include "launch/Launcher.h"

namespace {namespace} {{
{"".join(b for b in bodies if b)}
}} // namespace {namespace}

namespace {{
using namespace at;
using torch_ext::structured::create_out;
using torch_ext::structured::resize_out;
using torch_ext::structured::check_inplace;
using torch_ext::structured::maybe_create_proxy;

{"".join(wrappers)}
}} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {{
{reg_block}
}}

{stub_part}"""


def emit_new_ops(ops: list[Op], namespace: str) -> str:
    defs, impls, metas, wrappers = [], [], [], []
    for op in ops:
        with _new_op_context():
            sig = NativeSignature(op.schema, prefix="", symint=False)
            ret = sig.returns_type().cpp_type()
            names = [a.name for a in sig.arguments()]
            name = str(op.schema.name)
            schema = str(op.schema).replace("\\", "\\\\").replace('"', '\\"')
            defs.append(f'  m.def("{schema}");')
            impls.append(f'  m.impl("{name}", TORCH_FN({namespace}::{op.kernel}));')
            returned = [a.name for a in op.schema.arguments.out]
            meta_fn = f"meta_{op.kernel}"
            wrappers.append(
                f"{sig.defn(name=meta_fn)} {{\n"
                f"{textwrap.indent(_call_kernel(op.fake, ret, names, returned), '  ')}\n}}\n"
            )
            metas.append(f'  m.impl("{name}", TORCH_FN({meta_fn}));')
    nl = "\n"
    bodies = "".join(_bodies(op, namespace) for op in ops)  # generated Triton calls
    return f"""// Generated by `python -m codegen` from the op manifest. Do not edit.
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include "{NEW_HEADER}"
#include "launch/Launcher.h"

namespace {namespace} {{
{bodies}
}} // namespace {namespace}

namespace {{
using namespace at;
{nl.join(wrappers)}
}} // namespace

TORCH_LIBRARY_FRAGMENT(torch_ext, m) {{
{nl.join(defs)}
}}

TORCH_LIBRARY_IMPL(torch_ext, PrivateUse1, m) {{
{nl.join(impls)}
}}

TORCH_LIBRARY_IMPL(torch_ext, Meta, m) {{
{nl.join(metas)}
}}
"""
