#include "runtime/Device.h"

#include "runtime/Driver.h"

#include <c10/util/Exception.h>

namespace torch_ext::runtime {

namespace {
thread_local c10::DeviceIndex current = 0;
}

c10::DeviceIndex device_count() noexcept {
  try {
    return static_cast<c10::DeviceIndex>(driver().deviceCount());
  } catch (...) {
    return 0;
  }
}

void check_device_index(c10::DeviceIndex index) {
  auto count = device_count();
  TORCH_CHECK(index >= 0 && index < count, "Invalid device index ", static_cast<int>(index),
              " for privateuseone: torch_ext has ", static_cast<int>(count), " device(s) (driver ",
              count ? driver().name() : "none", ")");
}

c10::DeviceIndex resolve_device(c10::DeviceIndex index) {
  if (index < 0) return current_device();
  check_device_index(index);
  return index;
}

c10::DeviceIndex current_device() { return current; }

void set_device(c10::DeviceIndex index) {
  check_device_index(index);
  current = index;
}

}  // namespace torch_ext::runtime
