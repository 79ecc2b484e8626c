"""The New mode (`torch_ext::name(schema)` entries): the operator's library definition,
its PrivateUse1 and Meta kernels, and the generated Triton call (golden-style, as
test_modes.py)."""

from __future__ import annotations

from conftest import make_csrc, squash

NEW_OP = """
    - func: torch_ext::add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps=1e-6) -> Tensor
      triton: add_rms_norm
      fake: add_rms_norm_meta
    """


def test_new_op(codegen):
    r = codegen(NEW_OP)
    assert r.rc == 0, r.err
    files = r.files()
    lib = files["RegisterTorchExtOps.cpp"]
    t = squash(lib)
    assert (
        'TORCH_LIBRARY_FRAGMENT(torch_ext, m) { m.def("add_rms_norm(Tensor x, Tensor residual, '
        'Tensor weight, float eps=1e-06) -> Tensor"); }'
    ) in t or (
        'TORCH_LIBRARY_FRAGMENT(torch_ext, m) { m.def("add_rms_norm(Tensor x, Tensor residual, '
        'Tensor weight, float eps=1e-6) -> Tensor"); }'
    ) in t
    assert (
        "TORCH_LIBRARY_IMPL(torch_ext, PrivateUse1, m) { "
        'm.impl("add_rms_norm", TORCH_FN(at::musa::add_rms_norm)); }'
    ) in t
    assert (
        "TORCH_LIBRARY_IMPL(torch_ext, Meta, m) { "
        'm.impl("add_rms_norm", TORCH_FN(meta_add_rms_norm)); }'
    ) in t
    assert (
        "at::Tensor meta_add_rms_norm(const at::Tensor & x, const at::Tensor & residual, "
        "const at::Tensor & weight, double eps) { return torch_ext::launch::call<at::Tensor>("
        '"add_rms_norm_meta", x, residual, weight, eps); }'
    ) in t
    assert "at::Tensor add_rms_norm(const at::Tensor & x" in files["MusaFunctions_new.h"]
    # the PrivateUse1 kernel that the registration names is defined (generated Triton call)
    all_cpp = squash("\n".join(v for k, v in files.items() if k.endswith(".cpp")))
    assert (
        "at::Tensor add_rms_norm(const at::Tensor & x, const at::Tensor & residual, "
        "const at::Tensor & weight, double eps) { return torch_ext::launch::call<at::Tensor>("
        '"add_rms_norm", x, residual, weight, eps); }'
    ) in all_cpp
    # new ops do not go to the aten registration shards
    assert not r.nonempty_shards()


def test_new_op_mutating_its_arguments(codegen):
    """A new operator that writes into arguments (`Tensor(a!)`) and returns nothing: its
    kernel, meta function and declaration take them as `at::Tensor &` (torchgen's
    per-function setting for mutable tensors, which a new operator has no
    NativeFunction to carry) and call the Triton kernel for its effect."""
    r = codegen(
        """
        - func: torch_ext::stats_update(Tensor mean, Tensor(a!) running_mean, float momentum) -> ()
          triton: stats_update
          fake: stats_update_meta
        """
    )
    assert r.rc == 0, r.err
    files = r.files()
    sig = "(const at::Tensor & mean, at::Tensor & running_mean, double momentum)"
    assert f"void stats_update{sig};" in squash(files["MusaFunctions_new.h"])
    all_cpp = squash("\n".join(v for k, v in files.items() if k.endswith(".cpp")))
    assert (
        f"void stats_update{sig} {{ torch_ext::launch::call("
        '"stats_update", mean, running_mean, momentum); }'
    ) in all_cpp
    assert (
        f"void meta_stats_update{sig} {{ torch_ext::launch::call("
        '"stats_update_meta", mean, running_mean, momentum); }'
    ) in all_cpp
    assert 'm.def("stats_update(Tensor mean, Tensor(a!) running_mean, float momentum) -> ()");' in (
        squash(files["RegisterTorchExtOps.cpp"])
    )


def test_new_op_handwritten_body(codegen, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/AddRmsNorm.cpp": """\
        namespace at::musa {
        at::Tensor add_rms_norm(const at::Tensor& x, const at::Tensor& r, const at::Tensor& w, double eps) {
          return x;
        }
        }
        """
        },
    )
    r = codegen(
        """
        - func: torch_ext::add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps=1e-6) -> Tensor
          fake: add_rms_norm_meta
        """,
        csrc=csrc,
    )
    assert r.rc == 0, r.err
    assert "TORCH_FN(at::musa::add_rms_norm)" in r.files()["RegisterTorchExtOps.cpp"]
    assert '"add_rms_norm"' not in r.files()["RegisterTorchExtOps.cpp"].split("TORCH_LIBRARY")[0]
