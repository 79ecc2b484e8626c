// Hand-written bodies for Plain factory entries (arange.start_out, linspace.out,
// eye.out, eye.m_out in the manifest): C++ validates the arguments and sizes
// `out` as PyTorch does, then launches the Triton kernel, which fills an
// already-sized output. The manifest keeps `triton:`; these bodies win.
#include <cmath>

// Only these ops' declarations (codegen/gen.py op_header).
#include "MusaFunctions_triton_arange_out.h"
#include "MusaFunctions_triton_eye_m_out.h"
#include "MusaFunctions_triton_eye_out.h"
#include "MusaFunctions_triton_linspace_out.h"
#include "launch/Launcher.h"

namespace TORCH_EXT_NAMESPACE {

at::Tensor& triton_arange_out(const at::Scalar& start, const at::Scalar& end,
                              const at::Scalar& step, at::Tensor& out) {
  const double dstart = start.to<double>(), dend = end.to<double>(), dstep = step.to<double>();
  TORCH_CHECK(dstep > 0 || dstep < 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(dstart) && std::isfinite(dend), "unsupported range: ", dstart, " -> ",
              dend);
  TORCH_CHECK((dstep > 0 && dend >= dstart) || (dstep < 0 && dend <= dstart),
              "upper bound and lower bound inconsistent with step sign");
  int64_t size;
  if (out.scalar_type() == at::kLong) {
    const int64_t s0 = start.to<int64_t>(), s1 = end.to<int64_t>(), st = step.to<int64_t>();
    TORCH_CHECK(st != 0, "step must be nonzero");
    const int64_t sign = (st > 0) - (st < 0);
    size = (s1 - s0 + st - sign) / st;
  } else {
    size = static_cast<int64_t>(std::ceil((dend - dstart) / dstep));
  }
  if (out.numel() != size) out.resize_({size});
  torch_ext::launch::call("arange", start, end, step, out);
  return out;
}

at::Tensor& triton_linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                                at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  torch_ext::launch::call("linspace", start, end, steps, out);
  return out;
}

at::Tensor& triton_eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  torch_ext::launch::call("eye", n, m, out);
  return out;
}

at::Tensor& triton_eye_out(int64_t n, at::Tensor& out) { return triton_eye_m_out(n, n, out); }

}  // namespace TORCH_EXT_NAMESPACE
