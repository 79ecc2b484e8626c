// DeviceGuardImplInterface for PrivateUse1: what DeviceGuard, StreamGuard,
// torch.Stream/torch.Event and torch.accelerator use.
#include "runtime/Allocator.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Stream.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

namespace torch_ext::runtime {
namespace {

// What a c10 event pointer points to: the driver event and its device.
struct Event {
  EventHandle handle;
  c10::DeviceIndex device;
};

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kType);
    auto old = current_device();
    if (d.index() != old) set_device(d.index());
    return c10::Device(kType, old);
  }
  c10::Device getDevice() const override { return c10::Device(kType, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kType);
    set_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_device(d.index());
    } catch (...) {
    }
  }
  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  c10::Stream getStream(c10::Device d) const override { return getCurrentStream(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return runtime::getDefaultStream(d.index());
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority = false) const override {
    return getStreamFromPool(d.index(), isHighPriority ? -1 : 0);
  }
  c10::Stream getNewStream(c10::Device d, int priority = 0) const override {
    return runtime::getNewStream(d.index(), priority);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    auto old = getCurrentStream(s.device_index());
    setCurrentStream(s);
    return old;
  }
  // Not `override`: older releases lack it.
  void* getStreamNativeHandle(const c10::Stream s) const { return driverStream(s); }
  bool queryStream(const c10::Stream& s) const override {
    return driver().queryStream(s.device_index(), driverStream(s));
  }
  void synchronizeStream(const c10::Stream& s) const override {
    driver().synchronizeStream(s.device_index(), driverStream(s));
  }
  void synchronizeDevice(const c10::DeviceIndex device) const override {
    driver().synchronizeDevice(resolve_device(device));
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device == stream.device_index() || device == -1, "Event device index ",
                static_cast<int>(device), " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()));
    auto* e = static_cast<Event*>(*event);
    if (!e) {
      bool timing = flag == c10::EventFlag::BACKEND_DEFAULT;
      e = new Event{driver().createEvent(stream.device_index(), timing), stream.device_index()};
      *event = e;
    }
    TORCH_CHECK(e->device == stream.device_index(),
                "Event was created on privateuseone:", static_cast<int>(e->device),
                " but is recorded on ", stream);
    driver().recordEvent(e->device, e->handle, driverStream(stream));
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    auto* e = static_cast<Event*>(event);
    driver().streamWaitEvent(stream.device_index(), driverStream(stream), e->handle);
  }
  bool queryEvent(void* event) const override {
    if (!event) return true;
    auto* e = static_cast<Event*>(event);
    return driver().queryEvent(e->device, e->handle);
  }
  void synchronizeEvent(void* event) const override {
    if (!event) return;
    auto* e = static_cast<Event*>(event);
    driver().synchronizeEvent(e->device, e->handle);
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (!event) return;
    auto* e = static_cast<Event*>(event);
    try {
      driver().destroyEvent(e->device, e->handle);
    } catch (...) {
    }
    delete e;
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex device) const override {
    TORCH_CHECK(start && end, "Both events must be recorded before calculating elapsed time.");
    auto* s = static_cast<Event*>(start);
    auto* e = static_cast<Event*>(end);
    return driver().elapsedMs(s->device, s->handle, e->handle);
  }

  void recordDataPtrOnStream(const c10::DataPtr& ptr, const c10::Stream& stream) const override {
    deviceAllocator().recordStream(ptr, stream);
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

}  // namespace torch_ext::runtime
