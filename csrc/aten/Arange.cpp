// A hand-written body for a Plain entry (arange.start_out in the manifest):
// C++ validates the range and sizes the output as PyTorch does (double
// arithmetic, exact for int64), then launches the Triton kernel. The manifest
// keeps `triton: arange`; this body wins.
#include <cmath>

#include "MusaFunctions.h"
#include "launch/Launcher.h"

namespace at::musa {

at::Tensor& triton_arange_out(const at::Scalar& start, const at::Scalar& end,
                              const at::Scalar& step, at::Tensor& out) {
  const double dstart = start.to<double>(), dend = end.to<double>(), dstep = step.to<double>();
  TORCH_CHECK(dstep > 0 || dstep < 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(dstart) && std::isfinite(dend), "unsupported range: ", dstart, " -> ", dend);
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

}  // namespace at::musa
