"""The manifest's `dtypes:` key: the generated registrations guard the op's element
types (csrc/aten/DtypeGuard.h)."""

from __future__ import annotations

from test_modes import squash


def test_dtypes_reach_every_registration_of_the_op(codegen):
    """`dtypes:` on a structured out entry: its functional, in-place and out
    registrations all go through DtypeGuard with the set (csrc/aten/DtypeGuard.h);
    an op without the key keeps the plain guard."""
    r = codegen(
        """
        - func: lerp.Scalar_out
          stub: lerp_kernel_scalar_weight
          triton: lerp_scalar
          dtypes: floating
        - func: lerp.Scalar
        - func: lerp_.Scalar
        - func: tril.out
          triton: tril
        """
    )
    assert r.rc == 0, r.err
    t = squash(r.all_text())
    mask = (
        "(torch_ext::aten::bit(c10::ScalarType::Half) | torch_ext::aten::bit(c10::ScalarType::BFloat16)"
        " | torch_ext::aten::bit(c10::ScalarType::Float) | torch_ext::aten::bit(c10::ScalarType::Double))"
    )
    for name in ("lerp.Scalar_out", "lerp.Scalar", "lerp_.Scalar"):
        assert f'DtypeGuard<"{name}", &' in t
        guard = t[t.index(f'DtypeGuard<"{name}", &') :].split(">::call", 1)[0]
        assert guard.endswith(mask), guard
    tril = t[t.index('DtypeGuard<"tril.out", &') :].split(">::call", 1)[0]
    assert "bit(" not in tril, tril


def test_complex_in_dtypes_lets_complex_reach_the_kernel(codegen):
    """`complex` in `dtypes:` adds ComplexFloat and ComplexDouble to the guard's set: the
    guard then sends complex arguments to the op's kernel (ops/complex.py), not to the
    CPU fallback it takes for types no kernel takes."""
    r = codegen(
        """
        - func: mul.out
          stub: mul_stub
          triton: mul
          dtypes: floating, integral, bool, complex
        - func: mul.Tensor
        """
    )
    assert r.rc == 0, r.err
    t = squash(r.all_text())
    for name in ("mul.out", "mul.Tensor"):
        guard = t[t.index(f'DtypeGuard<"{name}", &') :].split(">::call", 1)[0]
        for typ in ("Bool", "Long", "Half", "ComplexFloat", "ComplexDouble"):
            assert f"bit(c10::ScalarType::{typ})" in guard, (typ, guard)
