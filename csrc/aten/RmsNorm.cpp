// Autograd for aten::rms_norm on privateuseone. PyTorch's rms_norm is
// CompositeImplicitAutograd (five pointwise/reduction ops); the manifest
// registers the fused forward for PrivateUse1, and a backend kernel for a
// composite op needs its own autograd kernel: this one, in C++, so that a
// call costs no Python (the fused kernels replay from launch plans).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>

namespace torch_ext::aten {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::tuple<at::Tensor, at::Tensor> fused_forward(const at::Tensor& x, c10::IntArrayRef shape,
                                                 const std::optional<at::Tensor>& weight,
                                                 std::optional<double> eps) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torch_ext::rms_norm", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(
                           const at::Tensor&, c10::IntArrayRef, const std::optional<at::Tensor>&,
                           std::optional<double>)>();
  return op.call(x, shape, weight, eps);
}

std::tuple<at::Tensor, at::Tensor> fused_backward(const at::Tensor& grad, const at::Tensor& x,
                                                  c10::IntArrayRef shape, const at::Tensor& rstd,
                                                  const std::optional<at::Tensor>& weight,
                                                  std::array<bool, 2> mask) {
  static auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("torch_ext::rms_norm_backward", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(
              const at::Tensor&, const at::Tensor&, c10::IntArrayRef, const at::Tensor&,
              const std::optional<at::Tensor>&, std::array<bool, 2>)>();
  return op.call(grad, x, shape, rstd, weight, mask);
}

struct RmsNorm : public torch::autograd::Function<RmsNorm> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, c10::IntArrayRef shape,
                            const std::optional<at::Tensor>& weight, std::optional<double> eps) {
    auto [out, rstd] = fused_forward(x, shape, weight, eps);
    const bool has_weight = weight.has_value() && weight->defined();
    ctx->save_for_backward({x, has_weight ? *weight : at::Tensor(), rstd});
    ctx->saved_data["shape"] = shape.vec();
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    std::optional<at::Tensor> weight;
    if (saved[1].defined()) weight = saved[1];
    const auto shape = ctx->saved_data["shape"].toIntVector();
    std::array<bool, 2> mask = {
        ctx->needs_input_grad(0),
        weight.has_value() && ctx->needs_input_grad(1)};  // tensor inputs only
    auto [dx, dw] = fused_backward(grads[0].contiguous(), x, shape, saved[2], weight, mask);
    return {dx, at::Tensor(), dw, at::Tensor()};
  }
};

at::Tensor rms_norm_autograd(const at::Tensor& x, c10::SymIntArrayRef shape,
                             const std::optional<at::Tensor>& weight, std::optional<double> eps) {
  const bool weight_grad = weight.has_value() && weight->defined() && weight->requires_grad();
  if (!at::GradMode::is_enabled() || !(x.requires_grad() || weight_grad)) {
    // Nothing to differentiate (inference, no_grad): the fused forward alone, without
    // an autograd node and its saved tensors (half of the op's host cost per call).
    at::AutoDispatchBelowADInplaceOrView guard;
    return std::get<0>(fused_forward(x, C10_AS_INTARRAYREF_SLOW(shape), weight, eps));
  }
  return RmsNorm::apply(x, C10_AS_INTARRAYREF_SLOW(shape), weight, eps);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("rms_norm", TORCH_FN(rms_norm_autograd));
}

}  // namespace torch_ext::aten
