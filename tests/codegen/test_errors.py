"""Bad manifests: one clear error naming the entry and its line (and the fix),
exit status 1, and the output folder left exactly as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import make_csrc, run_cli, write_manifest


def snapshot(d: Path) -> dict:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(d.iterdir())}


@pytest.fixture
def outdir(tmp_path):
    """An output folder holding files from an earlier run, which must survive."""
    d = tmp_path / "out"
    d.mkdir()
    (d / "MusaFunctions.h").write_text("// from an earlier run\n")
    (d / "RegisterPrivateUse1_0.cpp").write_text("// from an earlier run\n")
    (d / "notes.txt").write_text("keep me\n")
    return d


def expect_error(codegen, outdir, text, line, entry, *fix, csrc=None):
    before = snapshot(outdir)
    r = codegen(text, out=outdir, csrc=csrc)
    assert r.rc == 1, (r.out, r.err)
    assert r.out == ""
    err = r.err.strip()
    assert err.startswith("codegen: error: "), err
    assert len(err.splitlines()) == 1, err  # one message
    if entry is not None:
        assert f"{r.manifest}:{line}: entry '{entry}': " in err, err
    elif line is not None:
        assert f"{r.manifest}:{line}:" in err, err
    for words in fix:
        assert words in err, err
    assert snapshot(outdir) == before  # nothing changed, nothing new
    return err


def test_unknown_op(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
        - func: trill.out
          dispatch: {PrivateUse1: MusaTril}
        """,
        2,
        "trill.out",
        "unknown operator or overload 'trill.out'",
        "did you mean",
        "tril.out",
    )


def test_unknown_overload(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_outt
        """,
        1,
        "lerp.Scalar_outt",
        "unknown operator or overload",
        "did you mean lerp.Scalar_out",
    )


def test_legacy_device_specific(codegen, outdir):
    err = expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
        """,
        1,
        "tril.out",
        "Legacy mode needs PyTorch's device-generic impl class",
        "tril_cpu / tril_cuda",
        "use LegacyMeta",
        "dispatch: {PrivateUse1: <Name>}",
    )
    assert "triton:" in err and "TORCH_IMPL_FUNC" in err


def test_legacy_device_specific_from_functional_only(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril
        - func: tril_
        """,
        1,
        "tril",
        "use LegacyMeta",
    )


def test_precomputed_on_non_structured(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: native_layer_norm
          precomputed:
          - eps -> float e
          dispatch: {PrivateUse1: musa_layer_norm}
          triton: layer_norm
        """,
        1,
        "native_layer_norm",
        "'precomputed' is only for structured ops",
        "register it with 'dispatch:' alone",
    )


def test_structured_inherits_on_non_structured(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
        - func: native_layer_norm
          structured_inherits: MyMetaBase
          dispatch: {PrivateUse1: musa_layer_norm}
          triton: layer_norm
        """,
        2,
        "native_layer_norm",
        "'structured_inherits' is only for structured ops",
        "register it with 'dispatch:' alone",
    )


def test_unknown_dispatch_key(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          dispatch:
            Foo: x
        """,
        1,
        "tril.out",
        "'Foo' is an unknown dispatch key",
        "registers only 'PrivateUse1'",
    )


def test_known_but_not_our_dispatch_key(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          dispatch:
            CUDA: x
        """,
        1,
        "tril.out",
        "'CUDA' is not this backend's key",
        "registers only 'PrivateUse1'",
    )


def test_duplicate_entry(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
        - func: lerp.Scalar
        - func: lerp.Scalar_out
        """,
        3,
        "lerp.Scalar_out",
        "duplicate entry (first at line 1)",
    )


def test_triton_kernel_missing(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril}
          triton: no_such_kernel
        """,
        1,
        "tril.out",
        "'triton: no_such_kernel' names no kernel",
        "not declared with @kernel in torch_ext/ops",
    )


def test_triton_module_attr_missing(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril}
          triton: "os.path:no_such_attr"
        """,
        1,
        "tril.out",
        "'triton: os.path:no_such_attr' names no kernel",
    )


def test_stub_missing(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
          stub: lerp_kernel_scalar_wieght
          triton: lerp_scalar
        """,
        1,
        "lerp.Scalar_out",
        "no DispatchStub named 'lerp_kernel_scalar_wieght'",
        "did you mean lerp_kernel_scalar_weight",
    )


def test_stub_without_triton(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
          stub: lerp_kernel_scalar_weight
        """,
        1,
        "lerp.Scalar_out",
        "needs 'triton:'",
    )


def test_mode_keys_on_non_out_member(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril
          dispatch:
            PrivateUse1: MusaTril
        - func: tril_
        - func: tril.out
        """,
        1,
        "tril",
        "'dispatch' belongs on the out entry 'tril.out'",
    )


def test_customized_without_handwritten_meta(codegen, outdir, tmp_path):
    csrc = make_csrc(
        tmp_path,
        {
            "aten/Tril.cpp": """\
        namespace at::musa {
        TORCH_IMPL_FUNC(MusaTril)(const Tensor& self, int64_t var, const Tensor& result) {}
        }
        """
        },
    )
    expect_error(
        codegen,
        outdir,
        """
        - func: tril
        - func: tril_
        - func: tril.out
          structured_inherits: MyMetaBase
          precomputed:
          - diagonal -> int var
          dispatch:
            PrivateUse1: MusaTril
        """,
        3,
        "tril.out",
        "Customized mode needs a hand-written TORCH_PRECOMPUTE_META_FUNC(tril)",
        "namespace at::musa",
        csrc=csrc,
    )


def test_customized_without_dispatch(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          precomputed:
          - diagonal -> int var
        """,
        1,
        "tril.out",
        "need 'dispatch: {PrivateUse1: <Name>}'",
    )


def test_precomputed_names_no_argument(codegen, outdir, tmp_path):
    csrc = make_csrc(tmp_path, {"aten/Tril.cpp": "TORCH_PRECOMPUTE_META_FUNC(tril)(x) {}\n"})
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          precomputed:
          - diagonl -> int var
          dispatch: {PrivateUse1: MusaTril}
          triton: tril
        """,
        1,
        "tril.out",
        "bad 'precomputed:'",
        "'diagonl' is not an argument of tril.out",
        csrc=csrc,
    )


def test_no_body_structured(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          dispatch:
            PrivateUse1: MusaTril
        """,
        1,
        "tril.out",
        "no body for MusaTril",
        "add 'triton: <kernel>'",
        "TORCH_IMPL_FUNC(MusaTril)",
    )


def test_no_body_plain(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: native_layer_norm
          dispatch: {PrivateUse1: musa_layer_norm}
        """,
        1,
        "native_layer_norm",
        "no body for musa_layer_norm",
        "add 'triton: <kernel>'",
        "at::musa::musa_layer_norm",
    )


def test_plain_without_dispatch(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: native_layer_norm
        """,
        1,
        "native_layer_norm",
        "is not structured in PyTorch",
        "'dispatch: {PrivateUse1: <kernel>}'",
    )


def test_new_op_without_fake(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: torch_ext::add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps=1e-6) -> Tensor
          triton: add_rms_norm
        """,
        1,
        "torch_ext::add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps=1e-6) -> Tensor",
        "needs 'fake: <kernel>'",
    )


def test_new_op_fake_missing(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: torch_ext::foo(Tensor x) -> Tensor
          triton: add_rms_norm
          fake: no_such_meta
        """,
        1,
        "torch_ext::foo(Tensor x) -> Tensor",
        "'fake: no_such_meta' names no kernel",
    )


def test_new_op_bad_schema(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: torch_ext::foo(Tensor x ->
          triton: add_rms_norm
          fake: add_rms_norm_meta
        """,
        1,
        "torch_ext::foo(Tensor x ->",
        "cannot parse the schema",
    )


def test_unknown_key(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
        - func: tril.out
          dispach: {PrivateUse1: MusaTril}
        """,
        2,
        "tril.out",
        "unknown key 'dispach'",
        "known: dispatch, dtypes, fake, precomputed, structured_inherits, stub, triton",
    )


def test_not_a_list(codegen, outdir):
    err = expect_error(
        codegen,
        outdir,
        """
        func: tril.out
        dispatch: {PrivateUse1: MusaTril}
        """,
        None,
        None,
        "must be a YAML list of entries",
    )
    assert "musa_functions.yaml" in err


def test_invalid_yaml(codegen, outdir):
    err = expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril
        - func: lerp.Scalar_out
        """,
        3,
        None,
        "not valid YAML",
        "did not find expected ',' or '}'",
        "(while parsing a flow mapping at line 2)",
    )
    assert "<unicode string>" not in err


def test_entry_without_func(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
        - dispatch: {PrivateUse1: MusaTril}
        """,
        2,
        None,
        "every entry needs a 'func:' key",
    )


def test_bad_aten_name(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out(Tensor self) -> Tensor
        """,
        1,
        "tril.out(Tensor self) -> Tensor",
        "expected an aten operator name such as 'tril.out'",
        "torch_ext::name(schema)",
    )


# ---------------------------------------------------------------- through the real CLI


def _cli_error(tmp_path, text, *args):
    manifest = write_manifest(tmp_path, text)
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.cpp").write_text("// earlier\n")
    before = snapshot(out)
    csrc = make_csrc(tmp_path)
    p = run_cli("--manifest", str(manifest), "--csrc", str(csrc), "--out", str(out), *args)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stdout == ""
    assert snapshot(out) == before
    return manifest, p.stderr.strip()


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_cli_legacy_device_specific(tmp_path):
    manifest, err = _cli_error(
        tmp_path,
        """
        - func: lerp.Scalar_out
        - func: lerp.Scalar
        - func: tril.out
        """,
    )
    assert err.startswith(f"codegen: error: {manifest}:3: entry 'tril.out': Legacy mode"), err
    assert "use LegacyMeta" in err
    assert "Traceback" not in err


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_cli_unknown_dispatch_key(tmp_path):
    manifest, err = _cli_error(
        tmp_path,
        """
        - func: tril
        - func: tril.out
          dispatch:
            Foo: x
        """,
    )
    assert err == (
        f"codegen: error: {manifest}:2: entry 'tril.out': 'Foo' is an unknown "
        "dispatch key; this backend registers only 'PrivateUse1'"
    )


@pytest.mark.slow  # a fresh interpreter or a codegen run: seconds
def test_cli_missing_triton_kernel_real_registry(tmp_path):
    """No kernel of torch_ext/ops (no monkeypatch) declares this name."""
    manifest, err = _cli_error(
        tmp_path,
        """
        - func: tril.out
          dispatch: {PrivateUse1: MusaTril}
          triton: surely_not_a_kernel_name
        """,
    )
    assert (
        f"{manifest}:1: entry 'tril.out': 'triton: surely_not_a_kernel_name' names no kernel" in err
    )


def test_unknown_dtype_name(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: tril.out
          triton: tril
          dtypes: floating, complex32
        """,
        1,
        "tril.out",
        "'dtypes:' names an unknown type 'complex32'",
        "known: floating, integral, complex, float16",
    )


def test_dtypes_on_the_functional_entry_of_a_structured_group(codegen, outdir):
    expect_error(
        codegen,
        outdir,
        """
        - func: lerp.Scalar_out
          stub: lerp_kernel_scalar_weight
          triton: lerp_scalar
        - func: lerp.Scalar
          dtypes: floating
        """,
        4,
        "lerp.Scalar",
        "'dtypes' belongs on the out entry 'lerp.Scalar_out'",
    )
