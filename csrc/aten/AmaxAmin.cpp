// Autograd for aten::amax and aten::amin on privateuseone. PyTorch's backward is the
// composite scale_grad_by_count(grad, result == self, dim) (derivatives.yaml): an eq, a
// sum of the ties, a div and a mul, four launches and temporaries of the input's size.
// This kernel saves self and result as PyTorch does and runs torch_ext::amax_backward
// instead (one launch where a lane's elements fit one tile, else two;
// torch_ext/ops/amax_backward.py). A backward whose graph is built (create_graph: double
// backward) takes PyTorch's formula in differentiable ops; a dual input (forward-mode AD)
// gets PyTorch's jvp formula.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/Functions.h>
#include <c10/core/WrapDimMinimal.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

namespace torch_ext::aten {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor fused_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& result,
                          at::IntArrayRef dim, bool keepdim) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("torch_ext::amax_backward", "")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         at::IntArrayRef, bool)>();
  return op.call(grad, self, result, dim, keepdim);
}

// The reduced dims, wrapped and sorted; an empty `dim` reduces every dim.
std::vector<int64_t> reduced_dims(const at::Tensor& self, at::IntArrayRef dim) {
  const int64_t nd = self.dim();
  std::vector<int64_t> dims;
  if (nd == 0) {
    return dims;
  }
  if (dim.empty()) {
    for (int64_t d = 0; d < nd; ++d) {
      dims.push_back(d);
    }
    return dims;
  }
  for (int64_t d : dim) {
    dims.push_back(c10::maybe_wrap_dim(d, nd));
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

// t (the shape of the result) with the reduced dims back as size 1, as self's rank.
at::Tensor restore_reduced_dims(const at::Tensor& t, const std::vector<int64_t>& dims,
                                bool keepdim) {
  if (keepdim) {
    return t;
  }
  at::Tensor out = t;
  for (int64_t d : dims) {
    out = out.unsqueeze(d);
  }
  return out;
}

at::Tensor reduce_below_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                                 bool is_min) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return is_min ? at::amin(self, dim, keepdim) : at::amax(self, dim, keepdim);
}

struct AmaxAmin : public torch::autograd::Function<AmaxAmin> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::IntArrayRef dim,
                            bool keepdim, bool is_min) {
    at::Tensor result = reduce_below_autograd(self, dim, keepdim, is_min);
    ctx->save_for_backward({self, result});
    ctx->saved_data["dim"] = dim.vec();
    ctx->saved_data["keepdim"] = keepdim;
    return result;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto dim = ctx->saved_data["dim"].toIntVector();
    const bool keepdim = ctx->saved_data["keepdim"].toBool();
    const at::Tensor& self = saved[0];
    const at::Tensor& result = saved[1];
    at::Tensor grad;
    if (at::GradMode::is_enabled()) {
      // create_graph: the gradient must itself be differentiable (in grad), so PyTorch's
      // formula in ops autograd records.
      const auto dims = reduced_dims(self, dim);
      const at::Tensor mask = restore_reduced_dims(result, dims, keepdim).eq(self);
      grad = restore_reduced_dims(grads[0], dims, keepdim).div(mask.sum(dims, true)).mul(mask);
    } else {
      grad = fused_backward(grads[0], self, result, dim, keepdim);
    }
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor amax_amin_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                              bool is_min) {
  // A dual self (forward-mode AD, level 0 as PyTorch's generated kernels): the reduction of
  // its primal, and PyTorch's jvp (the tangent averaged over the ties) set on the result.
  const at::Tensor tangent = self._fw_grad(/*level=*/0);
  const at::Tensor primal = tangent.defined() ? self._fw_primal(0) : self;
  const at::Tensor result = at::GradMode::is_enabled() && primal.requires_grad()
                                ? AmaxAmin::apply(primal, dim, keepdim, is_min)
                                : reduce_below_autograd(primal, dim, keepdim, is_min);
  if (tangent.defined()) {
    const auto dims = reduced_dims(self, dim);
    const at::Tensor mask = primal.eq(restore_reduced_dims(result, dims, keepdim));
    const at::Tensor jvp =
        at::where(mask, tangent, 0.0).sum(dims, keepdim).div(mask.sum(dims, keepdim));
    result._set_fw_grad(jvp, /*level=*/0, /*is_inplace_op=*/false);
  }
  return result;
}

at::Tensor amax_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return amax_amin_autograd(self, dim, keepdim, /*is_min=*/false);
}

at::Tensor amin_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return amax_amin_autograd(self, dim, keepdim, /*is_min=*/true);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("amax", TORCH_FN(amax_autograd));
  m.impl("amin", TORCH_FN(amin_autograd));
}

}  // namespace torch_ext::aten
