// Copies between the host and devices, and between devices. Same dtype, same
// sizes and strides over dense memory is one driver memcpy; anything else
// (dtype conversion, different strides, broadcasting, conj/neg bits) is done
// by PyTorch's CPU copy on host staging of the spans involved.
#include "launch/Launcher.h"
#include "launch/Plan.h"
#include "runtime/Allocator.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Stream.h"

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <cstring>

namespace torch_ext::aten {
namespace {

using runtime::CopyKind;
using runtime::driver;

// The bytes a tensor's elements occupy in its storage, from its first element
// to its last (strides are never negative).
struct Span {
  int64_t first = 0;  // element offset in the storage
  size_t bytes = 0;
};

Span span_of(const at::Tensor& t) {
  if (t.numel() == 0) return {};
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return {t.storage_offset(), static_cast<size_t>(last + 1) * t.element_size()};
}

char* storage_base(const at::Tensor& t) { return static_cast<char*>(t.storage().mutable_data()); }
const char* span_ptr(const at::Tensor& t, const Span& s) {
  return storage_base(t) + s.first * t.element_size();
}

runtime::StreamHandle current_stream(c10::DeviceIndex device) {
  return runtime::driverStream(runtime::getCurrentStream(device));
}

bool same_layout(const at::Tensor& a, const at::Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes().equals(b.sizes()) && a.strides().equals(b.strides()) &&
         a.is_non_overlapping_and_dense() && b.is_non_overlapping_and_dense() &&
         a.is_conj() == b.is_conj() && a.is_neg() == b.is_neg();
}

// A CPU tensor with `t`'s sizes, strides and math bits over a host copy of
// `t`'s span (read from the device unless `read` is false).
at::Tensor stage(const at::Tensor& t, bool read) {
  Span s = span_of(t);
  auto buffer = at::empty({static_cast<int64_t>(s.bytes)}, at::TensorOptions().dtype(at::kByte));
  if (read && s.bytes) {
    driver().memcpy(buffer.data_ptr(), span_ptr(t, s), s.bytes, CopyKind::DeviceToHost,
                    t.device().index(), current_stream(t.device().index()), false);
  }
  auto host = at::from_blob(
      buffer.data_ptr(), t.sizes(), t.strides(), [keep = buffer](void*) {},
      t.options().device(at::kCPU));
  if (t.is_conj()) host._set_conj(true);
  if (t.is_neg()) host._set_neg(true);
  return host;
}

// Writes a staged host tensor (from stage(dst, ...)) back to dst's span.
void unstage(const at::Tensor& host, const at::Tensor& dst) {
  Span s = span_of(dst);
  if (!s.bytes) return;
  driver().memcpy(const_cast<char*>(span_ptr(dst, s)), host.data_ptr(), s.bytes,
                  CopyKind::HostToDevice, dst.device().index(),
                  current_stream(dst.device().index()), false);
}

bool kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble:
      return true;
    default:
      return false;
  }
}

// Same-device copies that the Triton copy kernel handles (cuda driver).
bool on_device_kernel(const at::Tensor& src, const at::Tensor& dst) {
  // The host driver stages through the CPU, except while a launch plan
  // records: then it runs the kernel the cuda driver runs, which a plan can
  // replay (a host copy cannot be).
  const bool kernel = std::strcmp(driver().name(), "cuda") == 0 || launch::plan::recording();
  return kernel && !src.is_cpu() && src.device() == dst.device() &&
         kernel_dtype(src.scalar_type()) && kernel_dtype(dst.scalar_type()) && !src.is_conj() &&
         !dst.is_conj() && !src.is_neg() && !dst.is_neg();
}

void copy_to_device(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceGuard guard(dst.device());
  auto device = dst.device().index();
  if (src.is_cpu() && same_layout(src, dst)) {
    Span s = span_of(dst);
    bool async = non_blocking && runtime::isPinnedPointer(src.data_ptr());
    driver().memcpy(const_cast<char*>(span_ptr(dst, s)), span_ptr(src, span_of(src)), s.bytes,
                    CopyKind::HostToDevice, device, current_stream(device), async);
    return;
  }
  if (!src.is_cpu() && same_layout(src, dst)) {
    Span s = span_of(dst);
    auto src_device = src.device().index();
    if (src_device == device) {
      // Stream-ordered like any kernel: no need to wait for it here.
      driver().memcpy(const_cast<char*>(span_ptr(dst, s)), span_ptr(src, span_of(src)), s.bytes,
                      CopyKind::DeviceToDevice, device, current_stream(device), /*async=*/true);
    } else {
      // The copy is ordered on dst's stream; src's work must be done first.
      driver().synchronizeStream(src_device, current_stream(src_device));
      driver().memcpyPeer(const_cast<char*>(span_ptr(dst, s)), device, span_ptr(src, span_of(src)),
                          src_device, s.bytes, current_stream(device));
      driver().synchronizeStream(device, current_stream(device));
    }
    return;
  }
  if (on_device_kernel(src, dst)) {
    // Device memory that the host cannot address: converting or restriding
    // through host staging would cost two bus transfers (hundreds of ms for
    // a large cast), so the copy kernel does it in place.
    auto iter = at::TensorIteratorConfig()
                    .add_output(dst)
                    .add_const_input(src)
                    .resize_outputs(false)
                    .check_all_same_dtype(false)
                    .check_all_same_device(false)
                    .build();
    torch_ext::launch::pointwise(iter, "copy");
    return;
  }
  at::Tensor host_src = src.is_cpu() ? src : stage(src, /*read=*/true);
  // A dense destination is overwritten whole: no need to read it first.
  at::Tensor host_dst = stage(dst, /*read=*/!dst.is_non_overlapping_and_dense());
  host_dst.copy_(host_src);
  unstage(host_dst, dst);
}

void copy_to_host(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceGuard guard(src.device());
  auto device = src.device().index();
  if (same_layout(src, dst)) {
    Span s = span_of(src);
    bool async = non_blocking && runtime::isPinnedPointer(dst.data_ptr());
    driver().memcpy(const_cast<char*>(span_ptr(dst, span_of(dst))), span_ptr(src, s), s.bytes,
                    CopyKind::DeviceToHost, device, current_stream(device), async);
    return;
  }
  dst.copy_(stage(src, /*read=*/true));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy: undefined tensor");
  if (dst.numel() == 0) return dst;
  bool src_host = self.is_cpu(), dst_host = dst.is_cpu();
  TORCH_CHECK((src_host || self.is_privateuseone()) && (dst_host || dst.is_privateuseone()),
              "torch_ext copy: cannot copy from ", self.device(), " to ", dst.device());
  if (dst_host)
    copy_to_host(self, dst, non_blocking);
  else
    copy_to_device(self, dst, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  auto host = at::empty({}, self.options().device(at::kCPU));
  copy_to_host(self.reshape({}), host, false);
  return at::native::_local_scalar_dense_cpu(host);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

}  // namespace torch_ext::aten

// Our copies carry the conjugate and negative bits through (the host staging
// keeps them, and the device kernels are only used without them), so these
// ops must not go through PyTorch's conj/neg fallbacks, which materialise the
// source with clone() -> copy_() -> _copy_from() again, without end.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
