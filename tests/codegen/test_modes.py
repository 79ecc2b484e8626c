"""Each manifest mode generates the class shapes of seed 002 (golden-style:
assertions on the key lines rather than whole files, so that small torchgen
formatting changes between torch 2.11 and 2.13 do not break them)."""

from __future__ import annotations

import re

from conftest import make_csrc, squash
from test_modes_new import NEW_OP

TRIL_CSRC_CUSTOMIZED = {
    "aten/MetaBases.h": """\
        #pragma once
        #include <ATen/TensorMeta.h>
        namespace at::musa {
        struct MyMetaBase : public at::impl::MetaBase {};
        } // namespace at::musa
        """,
    "aten/Tril.cpp": """\
        #include "MusaFunctions.h"
        namespace at::musa {
        TORCH_PRECOMPUTE_META_FUNC(tril)(const Tensor& self, int64_t diagonal) {
          int64_t var = diagonal;
          return TORCH_PRECOMPUTE_STRUCT(tril)().set_var(var);
        }
        TORCH_IMPL_FUNC(MusaTril)(const Tensor& self, int64_t var, const Tensor& result) {
        }
        } // namespace at::musa
        """,
}


# ---------------------------------------------------------------- Legacy


def test_legacy_lerp_with_stub_and_triton(codegen):
    r = codegen("""
        - func: lerp.Scalar_out
          stub: lerp_kernel_scalar_weight
          triton: lerp_scalar
        - func: lerp.Scalar
        - func: lerp_.Scalar
        """)
    assert r.rc == 0, r.err
    text = r.all_text()
    # functional/inplace/out classes derive from PyTorch's device-generic impl class
    for kind in ("functional", "inplace", "out"):
        assert (
            f"struct structured_lerp_Scalar_{kind} final : "
            "public at::native::structured_lerp_Scalar {"
        ) in text
    # the meta class is PyTorch's; nothing of ours in the header for Legacy
    header = r.header()
    assert "#include <ATen/ops/lerp_meta.h>" in header
    assert "struct TORCH_API" not in header
    # the stub's PrivateUse1 slot is filled with a function launching Triton
    assert (
        "REGISTER_PRIVATEUSE1_DISPATCH(lerp_kernel_scalar_weight, &privateuse1_lerp_kernel_scalar_weight)"
        in text
    )
    assert re.search(
        r"void privateuse1_lerp_kernel_scalar_weight\(at::TensorIteratorBase& a0, "
        r"const (c10::|at::)?Scalar& a1\) \{\s*torch_ext::launch::pointwise_call\(a0, "
        r'"lerp_scalar", a1\);',
        text,
    )
    assert "#include <ATen/native/Lerp.h>" in text
    # all three members registered, in one shard
    shards = r.nonempty_shards()
    assert len(shards) == 1
    for name in ("lerp.Scalar", "lerp.Scalar_out", "lerp_.Scalar"):
        assert f'm.impl("{name}", TORCH_FN(' in shards[0]
    # device guard inside the classes, as PyTorch's CUDA classes have one
    assert "c10::OptionalDeviceGuard guard_;" in text
    assert "guard_.reset_device(options.device());" in text


def test_legacy_seed_names_only_parses(codegen):
    """Seed 002's Legacy snippet, unchanged: no stub key; the stub is filled by
    hand-written C++ (so nothing is generated for it)."""
    r = codegen("""
        - func: lerp.Scalar_out
        - func: lerp.Scalar
        - func: lerp_.Scalar

        - func: lerp.Tensor_out
        - func: lerp.Tensor
        - func: lerp_.Tensor
        """)
    assert r.rc == 0, r.err
    text = r.all_text()
    assert "public at::native::structured_lerp_Scalar {" in text
    assert "public at::native::structured_lerp_Tensor {" in text
    assert "REGISTER_PRIVATEUSE1_DISPATCH" not in text
    for name in (
        "lerp.Scalar",
        "lerp.Scalar_out",
        "lerp_.Scalar",
        "lerp.Tensor",
        "lerp.Tensor_out",
        "lerp_.Tensor",
    ):
        assert f'm.impl("{name}", TORCH_FN(' in text


def test_legacy_ufunc_add(codegen):
    r = codegen("""
        - func: add.out
          stub: add_stub
          triton: add
        """)
    assert r.rc == 0, r.err
    text = r.all_text()
    for kind in ("functional", "inplace", "out"):
        assert (
            f"struct structured_ufunc_add_CPU_{kind} final : "
            "public at::native::structured_ufunc_add_CPU {"
        ) in text
    assert "REGISTER_PRIVATEUSE1_DISPATCH(add_stub, &privateuse1_add_stub)" in text
    assert 'pointwise_call(a0, "add", a1)' in text
    for name in ("add.Tensor", "add.out", "add_.Tensor"):
        assert f'm.impl("{name}", TORCH_FN(' in text


def test_legacy_stub_mapping_form(codegen):
    r = codegen("""
        - func: lerp.Tensor_out
          stub: {lerp_kernel_tensor_weight: lerp_tensor}
        """)
    assert r.rc == 0, r.err
    assert "REGISTER_PRIVATEUSE1_DISPATCH(lerp_kernel_tensor_weight, " in r.all_text()
    assert '"lerp_tensor"' in r.all_text()


def test_legacy_handwritten_stub_fill_wins(codegen, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/Lerp.cpp": """\
        namespace at::native {
        REGISTER_PRIVATEUSE1_DISPATCH(lerp_kernel_scalar_weight, &my_lerp_kernel);
        }
        """
        },
    )
    r = codegen(
        """
        - func: lerp.Scalar_out
          stub: lerp_kernel_scalar_weight
          triton: lerp_scalar
        """,
        csrc=csrc,
    )
    assert r.rc == 0, r.err
    assert "REGISTER_PRIVATEUSE1_DISPATCH" not in r.all_text()


# ---------------------------------------------------------------- LegacyMeta


def test_legacymeta_tril_seed(codegen, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/Tril.cpp": """\
        namespace at::musa {
        TORCH_IMPL_FUNC(MusaTril)(const Tensor& self, int64_t k, const Tensor &result) {
        }
        }
        """
        },
    )
    r = codegen(
        """
        - func: tril
        - func: tril_
        - func: tril.out
          dispatch:
            PrivateUse1: MusaTril
        """,
        csrc=csrc,
    )
    assert r.rc == 0, r.err
    header = squash(r.header())
    assert "namespace at::musa {" in header
    assert (
        "struct TORCH_API structured_MusaTril : public at::meta::structured_tril { "
        "void impl(const at::Tensor & self, int64_t diagonal, const at::Tensor & out); };"
    ) in header
    text = r.all_text()
    for kind in ("functional", "inplace", "out"):
        assert (
            f"struct structured_MusaTril_{kind} final : public at::musa::structured_MusaTril {{"
        ) in text
    # body is hand-written: no generated TORCH_IMPL_FUNC
    assert "TORCH_IMPL_FUNC(MusaTril)" not in text
    for name in ("tril", "tril.out", "tril_"):
        assert f'm.impl("{name}", TORCH_FN(' in text
    # device checks like PyTorch's CUDA wrappers (tril is not NoCheck)
    assert (
        'c10::impl::check_and_update_common_device(common_device, self, "wrapper_PrivateUse1_tril", "self");'
        in text
    )
    assert (
        'check_and_update_common_device(common_device, out, "wrapper_PrivateUse1_tril_out_out", "out");'
        in text
    )
    assert "op.meta(self, diagonal);" in text


def test_legacymeta_triton_body_generated(codegen):
    r = codegen("""
        - func: tril
        - func: tril_
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril}
          triton: tril
        """)
    assert r.rc == 0, r.err
    text = squash(r.all_text())
    assert (
        "TORCH_IMPL_FUNC(MusaTril)(const at::Tensor & self, int64_t diagonal, const at::Tensor & out) { "
        'torch_ext::launch::call("tril", self, diagonal, out); }'
    ) in text


def test_namespace_option(codegen, tmp_path):
    r = codegen(
        """
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril}
          triton: tril
        """,
        extra=("--namespace", "at::mydev"),
    )
    assert r.rc == 0, r.err
    text = r.all_text()
    assert "namespace at::mydev {" in text
    assert "public at::mydev::structured_MusaTril {" in text
    assert "at::musa" not in text


# ---------------------------------------------------------------- Customized

CUSTOMIZED_SEED = """
    - func: tril
    - func: tril_
    - func: tril.out
      structured_inherits: MyMetaBase  # 集成的基类名
      precomputed:
      - diagonal -> int var # 需要传递的中间变量
      dispatch:
        PrivateUse1: MusaTril
    """


def test_customized_tril_seed(codegen, tmp_path):
    csrc = make_csrc(tmp_path, TRIL_CSRC_CUSTOMIZED)
    r = codegen(CUSTOMIZED_SEED, csrc=csrc)
    assert r.rc == 0, r.err
    header = r.header()
    h = squash(header)
    # the hand-written base classes are included (by path or relative to csrc/)
    assert re.search(r'#include "(.*/)?aten/MetaBases.h"', header), header
    # our meta class, in the backend namespace, inheriting the named base
    assert re.search(r"struct TORCH_API structured_tril : public (at::musa::)?MyMetaBase \{", h)
    assert "template <bool VAR = false> struct TORCH_API precompute_out {" in h
    assert (
        "precompute_out<true> set_var(int64_t value) { "
        'static_assert(VAR == false, "var already set"); '
        "precompute_out<true> ret; ret.var = value; return ret; }"
    ) in h
    assert "int64_t var;" in h
    assert re.search(r"using meta_return_ty = precompute_out ?<true>;", h)
    assert "meta_return_ty meta(const at::Tensor & self, int64_t diagonal);" in h
    # the impl class derives from OUR meta class and takes the precomputed value
    assert (
        "struct TORCH_API structured_MusaTril : public at::musa::structured_tril { "
        "void impl(const at::Tensor & self, int64_t var, const at::Tensor & out); };"
    ) in h
    # meta class precedes the impl class
    assert h.index("struct TORCH_API structured_tril ") < h.index(
        "struct TORCH_API structured_MusaTril "
    )
    text = r.all_text()
    for kind in ("functional", "inplace", "out"):
        assert (
            f"struct structured_MusaTril_{kind} final : public at::musa::structured_MusaTril {{"
        ) in text
    assert "auto precompute = op.meta(self, diagonal);" in text
    assert "op.impl(self, precompute.var, op.outputs_[0]);" in text
    assert "TORCH_IMPL_FUNC(MusaTril)" not in text  # hand-written wins


def test_customized_inherits_only(codegen, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/MetaBases.h": TRIL_CSRC_CUSTOMIZED["aten/MetaBases.h"],
            "aten/Tril.cpp": """\
            namespace at::musa {
            TORCH_META_FUNC(tril)(const Tensor& self, int64_t diagonal) {}
            }
            """,
        },
    )
    r = codegen(
        """
        - func: tril.out
          structured_inherits: MyMetaBase
          dispatch: {PrivateUse1: MusaTril}
          triton: tril
        """,
        csrc=csrc,
    )
    assert r.rc == 0, r.err
    h = squash(r.header())
    assert re.search(
        r"struct TORCH_API structured_tril : public (at::musa::)?MyMetaBase \{ "
        r"void meta\(const at::Tensor & self, int64_t diagonal\); \};",
        h,
    )
    assert "precompute_out" not in h
    assert (
        "TORCH_IMPL_FUNC(MusaTril)(const at::Tensor & self, int64_t diagonal, const at::Tensor & out)"
        in squash(r.all_text())
    )


def test_customized_triton_impl_takes_precomputed(codegen, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/MetaBases.h": TRIL_CSRC_CUSTOMIZED["aten/MetaBases.h"],
            "aten/TrilMeta.cpp": """\
            namespace at::musa {
            TORCH_PRECOMPUTE_META_FUNC(tril)(const Tensor& self, int64_t diagonal) {
              return TORCH_PRECOMPUTE_STRUCT(tril)().set_var(diagonal);
            }
            }
            """,
        },
    )
    r = codegen(
        """
        - func: tril.out
          structured_inherits: MyMetaBase
          precomputed:
          - diagonal -> int var
          dispatch: {PrivateUse1: MusaTril}
          triton: tril
        """,
        csrc=csrc,
    )
    assert r.rc == 0, r.err
    assert (
        "TORCH_IMPL_FUNC(MusaTril)(const at::Tensor & self, int64_t var, const at::Tensor & out) { "
        'torch_ext::launch::call("tril", self, var, out); }'
    ) in squash(r.all_text())


# ---------------------------------------------------------------- Plain


def test_plain_native_layer_norm(codegen):
    r = codegen("""
        - func: native_layer_norm
          dispatch:
            PrivateUse1: musa_layer_norm
          triton: layer_norm
        """)
    assert r.rc == 0, r.err
    h = squash(r.header())
    assert (
        "TORCH_API ::std::tuple<at::Tensor,at::Tensor,at::Tensor> musa_layer_norm("
        "const at::Tensor & input, at::IntArrayRef normalized_shape, "
        "const ::std::optional<at::Tensor> & weight, const ::std::optional<at::Tensor> & bias, "
        "double eps);"
    ) in h
    text = r.all_text()
    t = squash(text)
    # generated body calling the Triton kernel
    assert (
        "return torch_ext::launch::call<::std::tuple<at::Tensor,at::Tensor,at::Tensor>>"
        '("layer_norm", input, normalized_shape, weight, bias, eps);'
    ) in t
    # wrapper with device checks and guard, as PyTorch's CUDA kernels have them
    assert (
        'check_and_update_common_device(common_device, input, "wrapper_PrivateUse1__native_layer_norm", "input");'
        in t
    )
    assert "const OptionalDeviceGuard device_guard(device_of(input));" in t
    assert "return at::musa::musa_layer_norm(input, normalized_shape, weight, bias, eps);" in t
    assert (
        'm.impl("native_layer_norm", TORCH_FN((torch_ext::aten::DtypeGuard<"native_layer_norm", '
        "&wrapper_PrivateUse1__native_layer_norm>::call)));" in t
    )
    assert "structured_" not in text.replace("using torch_ext::structured::", "")


def test_plain_handwritten_body_wins(codegen, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/LayerNorm.cpp": """\
        namespace at::musa {
        std::tuple<Tensor, Tensor, Tensor> musa_layer_norm(const Tensor& input, IntArrayRef shape,
            const std::optional<Tensor>& w, const std::optional<Tensor>& b, double eps) {
          return {};
        }
        }
        """
        },
    )
    r = codegen(
        """
        - func: native_layer_norm
          dispatch: {PrivateUse1: musa_layer_norm}
        """,
        csrc=csrc,
    )
    assert r.rc == 0, r.err
    assert "torch_ext::launch::call" not in r.all_text()
    assert 'm.impl("native_layer_norm"' in r.all_text()


# ---------------------------------------------------------------- all together, sharding


def test_all_modes_together_and_one_entry_change_touches_one_shard(codegen, tmp_path):
    csrc = make_csrc(tmp_path, TRIL_CSRC_CUSTOMIZED)
    text = (
        CUSTOMIZED_SEED
        + """
    - func: lerp.Scalar_out
      stub: lerp_kernel_scalar_weight
      triton: lerp_scalar
    - func: add.out
      stub: add_stub
      triton: add
    - func: native_layer_norm
      dispatch: {PrivateUse1: musa_layer_norm}
      triton: layer_norm
    """
        + NEW_OP
    )
    r = codegen(text, csrc=csrc)
    assert r.rc == 0, r.err
    before = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in r.outdir.iterdir()}
    r2 = codegen(text.replace("triton: layer_norm", "triton: add"), csrc=csrc)
    assert r2.rc == 0, r2.err
    after = {p.name: (p.stat().st_mtime_ns, p.read_text()) for p in r2.outdir.iterdir()}
    assert before.keys() == after.keys()
    changed = [n for n in before if before[n] != after[n]]
    assert len(changed) == 1 and changed[0].startswith("RegisterPrivateUse1_"), changed
    assert not [p for p in r2.outdir.iterdir() if p.name.startswith(".tmp-")]


def test_module_attr_kernel(codegen):
    r = codegen("""
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril}
          triton: "os.path:join"
        """)
    assert r.rc == 0, r.err
    assert 'torch_ext::launch::call("os.path:join", self, diagonal, out);' in r.all_text()


def test_dispatch_name_is_derived_from_triton(codegen):
    """`triton:` alone names the body once: the impl is ours, so the dispatch name is
    derived (structured: TritonTrilOut; plain: triton_<op>). Seed 002's spelling with
    both keys still works and keeps its explicit name."""
    r = codegen("""
        - func: tril.out
          triton: tril
        - func: native_layer_norm
          triton: layer_norm
        """)
    assert r.rc == 0, r.err
    text = r.all_text()
    assert "structured_TritonTrilOut" in text
    assert 'torch_ext::launch::call("tril", self, diagonal, out);' in text
    assert "triton_native_layer_norm" in text
    explicit = codegen("- func: tril.out\n  dispatch: {PrivateUse1: MusaTril}\n  triton: tril\n")
    assert explicit.rc == 0 and "structured_MusaTril" in explicit.all_text()
    listed = codegen("- func: tril.out\n  triton: tril\n", list_only=True)
    assert "LegacyMeta" in listed.out


def test_triton_with_stub_is_still_legacy(codegen):
    r = codegen(
        """
        - func: add.out
          stub: add_stub
          triton: add
        """,
        list_only=True,
    )
    assert r.rc == 0, r.err
    assert "Legacy " in r.out and "TritonAdd" not in r.out
