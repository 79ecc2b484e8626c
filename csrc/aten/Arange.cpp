// A hand-written body for a Plain entry (arange.start_out in the manifest):
// C++ sizes the output with PyTorch's own range arithmetic, then launches the
// Triton kernel. The manifest keeps `triton: arange`; this body wins.
#include <ATen/native/RangeUtils.h>

#include "MusaFunctions.h"
#include "launch/Launcher.h"

namespace at::musa {

at::Tensor& triton_arange_out(const at::Scalar& start, const at::Scalar& end,
                              const at::Scalar& step, at::Tensor& out) {
  const int64_t size = at::native::compute_arange_size(start, end, step);
  if (out.numel() != size) out.resize_({size});
  torch_ext::launch::call("arange", start, end, step, out);
  return out;
}

}  // namespace at::musa
