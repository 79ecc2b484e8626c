// PrivateUse1HooksInterface: how ATen (autograd, pin_memory, generators,
// storage resize) asks about the device.
#include "runtime/Allocator.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Generator.h"
#include "runtime/Stream.h"

#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/StorageImpl.h>

#include <algorithm>

namespace torch_ext::runtime {
namespace {

struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  // The host driver has no contexts; a device is usable once it exists.
  bool hasPrimaryContext(c10::DeviceIndex device) const override {
    return device >= 0 && device < device_count();
  }
  c10::DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(c10::DeviceIndex device) const override { set_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    auto old = current_device();
    set_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return defaultGenerator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device = -1) const override {
    return newGenerator(device);
  }

  at::Allocator* getPinnedMemoryAllocator() const override { return &pinnedAllocator(); }
  // Where torch itself has CUDA (the GPU machine's wheel), CPU factories with
  // pin_memory=True take CUDA's pinned allocator (at::globalContext().hasCUDA()
  // wins in GetCPUAllocatorMaybePinned), while is_pinned() asks the
  // accelerator, which is us: DDP's Reducer asserts that such a tensor is
  // pinned. CUDA's pinned memory counts as pinned here too.
  bool isPinnedPtr(const void* data) const override {
    return isPinnedPointer(data) || at::detail::getCUDAHooks().isPinnedPtr(data);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    auto device = deviceOfPointer(data);
    TORCH_CHECK(device.has_value(), "pointer ", data, " was not allocated by torch_ext");
    return at::Device(c10::DeviceType::PrivateUse1, *device);
  }

  // Storage resize (resize_, set_ growing a storage): new block, old bytes
  // copied over.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    auto* impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "Trying to resize storage that is not resizable");
    auto device = impl->data_ptr().device().index();
    c10::DataPtr fresh;
    {
      c10::DeviceIndex old = current_device();
      set_device(device);
      fresh = impl->allocator()->allocate(newsize);
      set_device(old);
    }
    size_t keep = std::min(newsize, impl->nbytes());
    if (keep) {
      driver().memcpy(fresh.get(), impl->data(), keep, CopyKind::DeviceToDevice, device,
                      driverStream(getCurrentStream(device)), false);
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

// Registered when the library loads, before Python touches the device.
const bool registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

}  // namespace
}  // namespace torch_ext::runtime
