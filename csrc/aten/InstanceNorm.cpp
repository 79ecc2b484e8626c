// Autograd for aten::instance_norm on privateuseone. PyTorch's instance_norm is
// CompositeImplicitAutograd: it repeats the weight, bias and running stats over the
// batch, runs batch norm over the (1, N*C, *) view and averages the running stats back
// (four launches each way with an affine, eight forward with running stats). Instance
// norm is group norm with a group per channel: this kernel normalises through
// native_group_norm (two launches each way, its own derivative), then, with running
// stats, updates them in one launch (torch_ext::instance_norm_running_update,
// torch_ext/ops/instance_norm.py). Without input statistics (eval with running stats)
// it is batch norm over the (N, C, *) tensor itself: one pointwise launch. Other calls
// (fewer than three dimensions, one element a channel, parameters of another dtype than
// the input's or float32 beside a 16-bit input) take PyTorch's composite, as before.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/batch_norm.h>
#include <ATen/ops/instance_norm_native.h>
#include <ATen/ops/native_group_norm.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

namespace torch_ext::aten {
namespace {

void running_update(const at::Tensor& mean, const at::Tensor& rstd, at::Tensor& running_mean,
                    at::Tensor& running_var, double momentum, double eps, int64_t count) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torch_ext::instance_norm_running_update", "")
                       .typed<void(const at::Tensor&, const at::Tensor&, at::Tensor&, at::Tensor&,
                                   double, double, int64_t)>();
  op.call(mean, rstd, running_mean, running_var, momentum, eps, count);
}

// The affine parameters' dtype group norm takes: the input's, or float32 beside a 16-bit
// input (autocast's mix).
bool param_dtype(const at::Tensor& input, const std::optional<at::Tensor>& t) {
  if (!(t.has_value() && t->defined())) return true;
  const auto dt = input.scalar_type();
  return t->scalar_type() == dt ||
         (t->scalar_type() == at::kFloat && (dt == at::kHalf || dt == at::kBFloat16));
}

bool defined(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

at::Tensor instance_norm_autograd(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                  const std::optional<at::Tensor>& bias,
                                  const std::optional<at::Tensor>& running_mean,
                                  const std::optional<at::Tensor>& running_var,
                                  bool use_input_stats, double momentum, double eps,
                                  bool cudnn_enabled) {
  const bool running = defined(running_mean) && defined(running_var);
  c10::SymInt count = 1;  // elements a (sample, channel); symbolic under torch.compile
  for (const auto d : c10::irange(2, input.dim())) count *= input.sym_size(d);
  const auto dt = input.scalar_type();
  const bool eligible =
      input.dim() >= 3 && count > 1 && param_dtype(input, weight) && param_dtype(input, bias) &&
      (!defined(weight) || !defined(bias) || weight->scalar_type() == bias->scalar_type()) &&
      (dt == at::kFloat || dt == at::kHalf || dt == at::kBFloat16 || dt == at::kDouble) &&
      (defined(running_mean) == defined(running_var)) && (use_input_stats || running) &&
      (!running ||
       (running_mean->is_contiguous() && running_var->is_contiguous() &&
        running_mean->device() == input.device() && running_var->device() == input.device()));
  if (!eligible) {
    return at::native::instance_norm(input, weight, bias, running_mean, running_var,
                                     use_input_stats, momentum, eps, cudnn_enabled);
  }
  if (!use_input_stats) {
    // eval: every sample normalised by the channel's running stats, batch norm's eval
    return at::batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps,
                          cudnn_enabled);
  }
  const int64_t c = input.sym_size(1).guard_int(__FILE__, __LINE__);  // the group count
  // group norm reads (N, C, H*W) rows: a channels_last input is laid out once here (its
  // gradient passes through), so that the forward and the backward share the copy
  const at::Tensor x = input.contiguous();
  auto [out, mean, rstd] =
      at::native_group_norm_symint(x, weight, bias, x.sym_size(0), x.sym_size(1), count, c, eps);
  if (running) {
    at::NoGradGuard no_grad;
    at::Tensor rm = *running_mean;
    at::Tensor rv = *running_var;
    running_update(mean, rstd, rm, rv, momentum, eps, count.guard_int(__FILE__, __LINE__));
  }
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("instance_norm", TORCH_FN(instance_norm_autograd));
}

}  // namespace torch_ext::aten
