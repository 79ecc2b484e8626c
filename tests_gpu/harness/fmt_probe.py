"""Probe for a crash seen on the GPU image (H200, torch 2.11+cu130, GCC 13.3):
a C++ extension built there segfaults when a TORCH_CHECK message formats an
integer (std::ostream::_M_insert<long> inside c10::str), with no torch_ext code
involved; a message without numbers works. torch_ext's error paths that format
numbers (OOM, invalid device index) crash the same way on that image.

    python tests_gpu/harness/fmt_probe.py     # prints two "ok:" lines when healthy
Next step: LD_DEBUG=bindings python tests_gpu/harness/fmt_probe.py 2>&1 | grep _M_insert
(which library the symbol binds to).
"""

from torch.utils.cpp_extension import load_inline

m = load_inline(
    "fmt_probe",
    cpp_sources='void f(int64_t v){ TORCH_CHECK(false, "value ", v); }\n'
    'void g(){ TORCH_CHECK(false, "plain"); }',
    functions=["f", "g"],
)
for fn, arg in ((m.g, ()), (m.f, (3,))):
    try:
        fn(*arg)
    except RuntimeError as e:
        print("ok:", str(e).splitlines()[0][:60], flush=True)
