// torch.profiler's PrivateUse1 hooks (torch::profiler::impl::ProfilerStubs):
// with the profiler in its KINETO_PRIVATEUSE1_FALLBACK state, every profiled
// op records a device event on our current stream when it starts and when it
// ends, and the time between the two is the op's device time
// (FunctionEvent.device_time, the "privateuseone" column of key_averages()).
// torch 2.11 and 2.13 reach this state only for a renamed PrivateUse1
// backend; torch_ext.profiler.profile selects it for ours. Both drivers work:
// the cuda driver records CUevents, the host driver timestamps.

#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Stream.h"

#include <memory>

namespace torch_ext::runtime {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct DeviceEvent {
  int device;
  EventHandle handle;
};

struct Stubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    const c10::DeviceIndex d = current_device();
    if (device) *device = d;
    Driver& drv = driver();
    auto* e = new DeviceEvent{d, drv.createEvent(d, /*enable_timing=*/true)};
    *event = std::shared_ptr<void>(e, [](void* p) {
      auto* ev = static_cast<DeviceEvent*>(p);
      driver().destroyEvent(ev->device, ev->handle);
      delete ev;
    });
    if (cpu_ns) *cpu_ns = c10::getTime();
    drv.recordEvent(d, e->handle, driverStream(getCurrentStream(d)));
  }

  // Microseconds between two recorded events (waits for the second).
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    auto* a = static_cast<DeviceEvent*>(start->get());
    auto* b = static_cast<DeviceEvent*>(end->get());
    TORCH_CHECK(a->device == b->device,
                "torch_ext profiler: an op's start and end events are on different devices");
    Driver& drv = driver();
    drv.synchronizeEvent(b->device, b->handle);
    return static_cast<float>(drv.elapsedMs(a->device, a->handle, b->handle) * 1000.0);
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::DeviceIndex previous = current_device();
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      set_device(d);
      op(d);
    }
    set_device(previous);
  }

  void synchronize() const override { driver().synchronizeDevice(current_device()); }
};

[[maybe_unused]] const bool registered = [] {
  static Stubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

}  // namespace
}  // namespace torch_ext::runtime
