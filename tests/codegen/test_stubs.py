"""DispatchStubs read from torch's headers (codegen/stubs.py): a stub that returns the
Tensor& it is handed (orgqr_stub) is filled like a void one, returning that tensor."""

from __future__ import annotations

from codegen.stubs import all_stubs
from conftest import FAKE_KERNELS
from test_modes import squash


def test_tensor_returning_stub_is_read_with_its_return():
    stubs = all_stubs()
    assert stubs["orgqr_stub"].returns == "at::Tensor&"
    assert [p.type for p in stubs["orgqr_stub"].params] == ["Tensor&", "const Tensor&"]
    assert stubs["geqrf_stub"].returns == "void"
    assert stubs["add_stub"].returns == "void"


def test_tensor_returning_stub_fill_returns_its_first_argument(codegen):
    FAKE_KERNELS.update({"geqrf", "orgqr"})  # declared for this run only
    try:
        r = codegen(
            """
            - func: linalg_qr.out
              stub: {geqrf_stub: geqrf, orgqr_stub: orgqr}
            """
        )
    finally:
        FAKE_KERNELS.difference_update({"geqrf", "orgqr"})
    assert r.rc == 0, r.err
    t = squash(r.all_text())
    assert (
        "at::Tensor& privateuse1_orgqr_stub(Tensor& a0, const Tensor& a1) { "
        'torch_ext::launch::call("orgqr", a0, a1); return a0; }'
    ) in t, t[t.find("orgqr_stub") - 200 : t.find("orgqr_stub") + 300]
    assert "void privateuse1_geqrf_stub(const Tensor& a0, const Tensor& a1) { " in t
    assert "REGISTER_PRIVATEUSE1_DISPATCH(orgqr_stub, &privateuse1_orgqr_stub)" in t
