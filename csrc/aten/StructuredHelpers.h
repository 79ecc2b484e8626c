#pragma once
// Output handling for the generated structured classes (functional, in-place,
// out), for a backend that allocates through the dispatcher.

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <optional>

namespace torch_ext::structured {

inline at::Tensor create_out(at::IntArrayRef sizes, at::IntArrayRef strides,
                             const at::TensorOptions& options) {
  if (strides.empty()) return at::empty(sizes, options);
  return at::empty_strided(sizes, strides, options);
}

inline void check_out_matches(const at::Tensor& out, const at::TensorOptions& options,
                              const char* what) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected ", what, " tensor to have dtype ",
              options.dtype(), ", but got ", out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected ", what, " tensor to be on device ",
              options.device(), ", but it is on ", out.device());
}

inline void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                       const at::TensorOptions& options) {
  check_out_matches(out, options, "out");
  const bool resized = at::native::resize_output(out, sizes);
  if (!resized) return;
  if (!strides.empty()) {
    out.as_strided_(sizes, strides);
  } else if (options.memory_format_opt().has_value()) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
  }
}

inline void check_inplace(const at::Tensor& self, at::IntArrayRef sizes,
                          const at::TensorOptions& options) {
  check_out_matches(self, options, "in-place (self)");
  TORCH_CHECK(self.sizes() == sizes, "Bad in-place call: input tensor size ", self.sizes(),
              " and output tensor size ", sizes, " should match");
}

inline std::optional<at::Tensor> maybe_create_proxy(const at::Tensor& out, at::IntArrayRef sizes,
                                                    at::IntArrayRef strides,
                                                    const at::TensorOptions& options) {
  if (out.strides() != strides) return at::empty_strided(sizes, strides, options);
  return std::nullopt;
}

}  // namespace torch_ext::structured
