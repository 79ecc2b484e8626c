// torch.autocast("privateuseone"): the same op lists and policies as CUDA's
// autocast (PyTorch registers none for PrivateUse1).
#include <ATen/autocast_mode.h>
#include <torch/version.h>
#include <torch/library.h>

namespace torch_ext::aten {
namespace {

using at::Tensor;
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 13
using at::DimnameList;  // named unqualified by torch 2.11's
                        // AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE
#endif
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::autocast::CastPolicy;

// As CUDA: binary_cross_entropy is unsafe in lower precision.
Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                   int64_t) {
  TORCH_CHECK(
      false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast; use "
      "torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss "
      "instead.");
}

#define LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(LOWER_PRECISION)
  AT_FORALL_FP32(FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(PROMOTE)
  // CompositeImplicitAutograd in PyTorch, so CUDA's autocast lists only its parts
  // (log_softmax, nll_loss: float32); here it has an autograd kernel of its own
  // (CrossEntropy.cpp), which autocast reaches before any decomposition.
  FP32(cross_entropy_loss)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN((&binary_cross_entropy_banned)));
}

// Ops not listed run unchanged (PyTorch registers no fallthrough for this key).
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

}  // namespace
}  // namespace torch_ext::aten
