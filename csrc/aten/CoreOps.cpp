// Factories, views and metadata ops of the device: what every tensor needs
// before any kernel runs. Views reuse ATen's device-agnostic helpers.
#include "runtime/Allocator.h"
#include "runtime/Device.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>

namespace torch_ext::aten {
namespace {

using runtime::deviceAllocator;

constexpr c10::DispatchKeySet kDeviceKeys(c10::DispatchKey::PrivateUse1);

c10::Device check_factory(std::optional<c10::Device> device, std::optional<c10::Layout> layout,
                          std::optional<bool> pin_memory) {
  auto d = c10::device_or_default(device);
  TORCH_CHECK(d.is_privateuseone(), "torch_ext: expected a privateuseone device, got ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "torch_ext: only strided tensors are supported on privateuseone");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
              "torch_ext: only CPU memory can be pinned");
  if (d.has_index()) runtime::check_device_index(d.index());
  return d;
}

at::Tensor empty_memory_format(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(check_factory(device, layout, pin_memory));
  return at::detail::empty_generic(C10_AS_INTARRAYREF_SLOW(size), &deviceAllocator(), kDeviceKeys,
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  c10::DeviceGuard guard(check_factory(device, layout, pin_memory));
  return at::detail::empty_strided_generic(C10_AS_INTARRAYREF_SLOW(size),
                                           C10_AS_INTARRAYREF_SLOW(stride), &deviceAllocator(),
                                           kDeviceKeys, c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> offset;
  if (storage_offset) offset = storage_offset->guard_int(__FILE__, __LINE__);
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size),
                                           C10_AS_INTARRAYREF_SLOW(stride), offset);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

// Grows the storage (through the hooks' resizePrivateUse1Bytes, which copies
// with the driver) when the tensor's new extent does not fit.
void ensure_storage(const at::Tensor& self) {
  auto* impl = self.unsafeGetTensorImpl();
  if (impl->numel() == 0) return;
  size_t needed = at::detail::computeStorageNbytes(
      impl->sizes(), impl->strides(), impl->dtype().itemsize(), impl->storage_offset());
  const auto& storage = impl->unsafe_storage();
  if (needed > storage.nbytes())
    at::native::resize_bytes_nocuda(storage, static_cast<int64_t>(needed));
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  at::native::resize_impl_cpu_(impl, C10_AS_INTARRAYREF_SLOW(size), std::nullopt,
                               /*resize_storage=*/false);
  ensure_storage(self);
  if (memory_format.has_value() && *memory_format != c10::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, c10::SymInt storage_offset,
                        c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  int64_t offset = storage_offset.guard_int(__FILE__, __LINE__);
  auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  auto strides = C10_AS_INTARRAYREF_SLOW(stride);
  at::native::checkSetStorage(self, source, offset, sizes, strides);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(offset);
  at::OptionalIntArrayRef stride_opt =
      strides.data() ? at::OptionalIntArrayRef(strides) : std::nullopt;
  at::native::resize_impl_cpu_(impl, sizes, stride_opt, /*resize_storage=*/false);
  ensure_storage(self);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  int64_t count = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, c10::SymIntArrayRef({c10::SymInt(count)}), {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return self;
  return set_storage(self, source.storage(), source.sym_storage_offset(), source.sym_sizes(),
                     source.sym_strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &deviceAllocator(), /*resizable=*/true);
  return set_storage(self, std::move(storage), 0, c10::SymIntArrayRef({c10::SymInt(0)}), {});
}

// nn.Module._apply and `param.data = t` swap a tensor's contents in place only where this holds.
// c10's own rule treats dense tensors of CPU, CUDA, MPS, HIP, XPU, HPU and MTIA as interchangeable
// but not PrivateUse1, so without this kernel `.to()` replaces every Parameter: tied weights come
// apart and an optimizer built before the move holds stale tensors. Our tensors are plain dense
// TensorImpls like theirs.
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](c10::DispatchKeySet ks) {
    constexpr auto backends = c10::DispatchKeySet(
        {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit,
         c10::BackendComponent::MPSBit, c10::BackendComponent::HIPBit,
         c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
         c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
    return ks.has(c10::DispatchKey::Dense) && ks.has_any(backends);
  };
  const auto ks = self.key_set();
  if (dense(ks) && dense(from.key_set())) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  deviceAllocator().recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("is_set_to", TORCH_FN(at::native::is_set_to));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

}  // namespace torch_ext::aten
