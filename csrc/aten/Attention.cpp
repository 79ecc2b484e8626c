// scaled_dot_product_attention on the device. PyTorch asks the backend which
// fused kernel to use (an op and a stub). We answer "overrideable" -- the
// backend-neutral fused path, whose forward and backward ops the manifest
// routes to our Triton flash-attention kernels -- when that kernel can serve
// the call (dropout included: the kernels draw it from Philox and the backward
// regenerates it), and "math" (PyTorch's composite path over our matmul/softmax)
// otherwise: a mask that needs a gradient, not 4-D, or the user disabled the
// backend (torch.nn.attention.sdpa_kernel).
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>

#include "MusaFunctions_fused_sdp_choice.h"  // its own op's declarations (gen.op_header)

namespace TORCH_EXT_NAMESPACE {

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  const auto& ctx = at::globalContext();
  const bool float_inputs =
      at::isFloatingType(query.scalar_type()) && query.scalar_type() != at::kDouble &&
      key.scalar_type() == query.scalar_type() && value.scalar_type() == query.scalar_type();
  const bool fused_ok = ctx.userEnabledOverrideableSDP() && float_inputs && query.dim() == 4 &&
                        key.dim() == 4 && value.dim() == 4 &&
                        (!attn_mask.has_value() || !attn_mask->requires_grad()) &&
                        query.size(1) % key.size(1) == 0 && key.size(1) == value.size(1);
  if (fused_ok) return static_cast<int64_t>(at::SDPBackend::overrideable);
  TORCH_CHECK(ctx.userEnabledMathSDP(),
              "scaled_dot_product_attention on privateuseone: the fused "
              "kernel cannot serve this call (a mask needing grad, or not 4-D) and the math "
              "backend is disabled");
  return static_cast<int64_t>(at::SDPBackend::math);
}

}  // namespace TORCH_EXT_NAMESPACE

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &TORCH_EXT_NAMESPACE::fused_sdp_choice)
}  // namespace at::native
