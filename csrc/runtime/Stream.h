#pragma once
// Streams as c10::Stream values. Stream id 0 is the device's default stream
// (driver handle nullptr); other ids index a per-device registry of driver
// streams, created from a pool (round-robin per priority) or on demand. Each
// thread has a current stream per device.

#include "runtime/Driver.h"

#include <c10/core/Stream.h>

namespace torch_ext::runtime {

c10::Stream getDefaultStream(c10::DeviceIndex device = -1);
c10::Stream getCurrentStream(c10::DeviceIndex device = -1);
void setCurrentStream(c10::Stream stream);
// `priority` as in CUDA: 0 is normal, negative is higher.
c10::Stream getStreamFromPool(c10::DeviceIndex device = -1, int priority = 0);
c10::Stream getNewStream(c10::DeviceIndex device = -1, int priority = 0);

StreamHandle driverStream(c10::Stream stream);
int streamPriority(c10::Stream stream);
// Rebuilds the c10::Stream for a registered id (used by Python bindings).
c10::Stream streamFromId(c10::DeviceIndex device, c10::StreamId id);

}  // namespace torch_ext::runtime
