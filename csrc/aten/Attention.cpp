// scaled_dot_product_attention on the device takes PyTorch's math path (matmul,
// softmax, dropout: all native kernels of ours). PyTorch asks the backend which
// fused kernel to use, through an op and a stub; both answer "math".
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/native/transformers/sdp_utils_cpp.h>

#include "MusaFunctions.h"

namespace at::musa {

int64_t fused_sdp_choice(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                         const std::optional<at::Tensor>&, double, bool, std::optional<double>,
                         bool) {
  return static_cast<int64_t>(sdp::SDPBackend::math);
}

}  // namespace at::musa

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &at::musa::fused_sdp_choice)
}  // namespace at::native
