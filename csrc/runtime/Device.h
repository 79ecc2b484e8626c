#pragma once
// Which devices exist and which one is current (per thread, as in CUDA).

#include <c10/core/Device.h>

namespace torch_ext::runtime {

// Never throws; 0 when the driver cannot be loaded.
c10::DeviceIndex device_count() noexcept;
c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);
// Throws "Invalid device index" naming the index and the device count.
void check_device_index(c10::DeviceIndex index);
// -1 (the current device) resolves to the current device; others are checked.
c10::DeviceIndex resolve_device(c10::DeviceIndex index);

}  // namespace torch_ext::runtime
