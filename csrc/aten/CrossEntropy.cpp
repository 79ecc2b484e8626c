// Autograd for aten::cross_entropy_loss on privateuseone. PyTorch's cross_entropy_loss
// is CompositeImplicitAutograd (log_softmax, then nll_loss): the (N, C) log-probabilities
// are written, saved and read back, and nll_loss's backward writes a dense (N, C)
// gradient first. For a (N, C) input with class-index targets, no class weights and no
// label smoothing, this kernel runs torch_ext::cross_entropy instead (one read of the
// logits, an lse per row saved; torch_ext/ops/cross_entropy.py) and its backward (one
// read, one write); any other call takes PyTorch's composite, as before.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/cross_entropy_loss_native.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

namespace torch_ext::aten {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_forward(const at::Tensor& input,
                                                             const at::Tensor& target,
                                                             int64_t reduction,
                                                             int64_t ignore_index) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torch_ext::cross_entropy", "")
                       .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, int64_t, int64_t)>();
  return op.call(input, target, reduction, ignore_index);
}

at::Tensor fused_backward(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& target,
                          const at::Tensor& lse, const at::Tensor& count, int64_t reduction,
                          int64_t ignore_index) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torch_ext::cross_entropy_backward", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         const at::Tensor&, const at::Tensor&, int64_t, int64_t)>();
  return op.call(grad, input, target, lse, count, reduction, ignore_index);
}

struct CrossEntropy : public torch::autograd::Function<CrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& target,
                            int64_t reduction, int64_t ignore_index) {
    auto [loss, lse, count] = fused_forward(input, target, reduction, ignore_index);
    ctx->save_for_backward({input, target, lse, count});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto reduction = ctx->saved_data["reduction"].toInt();
    const auto ignore_index = ctx->saved_data["ignore_index"].toInt();
    at::Tensor grad =
        fused_backward(grads[0], saved[0], saved[1], saved[2], saved[3], reduction, ignore_index);
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

bool fused(const at::Tensor& self, const at::Tensor& target,
           const std::optional<at::Tensor>& weight, double label_smoothing) {
  const auto dt = self.scalar_type();
  return self.dim() == 2 && target.dim() == 1 && target.scalar_type() == at::kLong &&
         !(weight.has_value() && weight->defined()) && label_smoothing == 0.0 &&
         (dt == at::kFloat || dt == at::kHalf || dt == at::kBFloat16) &&
         target.device() == self.device();
}

at::Tensor cross_entropy_loss_autograd(const at::Tensor& self, const at::Tensor& target,
                                       const std::optional<at::Tensor>& weight, int64_t reduction,
                                       c10::SymInt ignore_index, double label_smoothing) {
  if (!fused(self, target, weight, label_smoothing)) {
    return at::native::cross_entropy_loss_symint(self, target, weight, reduction,
                                                 std::move(ignore_index), label_smoothing);
  }
  const int64_t ignore = ignore_index.guard_int(__FILE__, __LINE__);
  if (!at::GradMode::is_enabled() || !self.requires_grad()) {
    // Nothing to differentiate (inference, no_grad): the fused forward alone.
    at::AutoDispatchBelowADInplaceOrView guard;
    return std::get<0>(fused_forward(self, target, reduction, ignore));
  }
  return CrossEntropy::apply(self, target, reduction, ignore);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("cross_entropy_loss", TORCH_FN(cross_entropy_loss_autograd));
}

}  // namespace torch_ext::aten
