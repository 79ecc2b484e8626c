#include "runtime/Stream.h"

#include "runtime/Device.h"

#include <c10/util/Exception.h>

#include <array>
#include <deque>
#include <mutex>
#include <vector>

namespace torch_ext::runtime {
namespace {

constexpr int kPoolSize = 4;

struct StreamRecord {
  StreamHandle handle;
  int priority;
};

struct DeviceStreams {
  // Index i holds stream id i + 1. A deque keeps references stable.
  std::deque<StreamRecord> streams;
  // Pool ids per priority (0 = normal, 1 = high), created lazily.
  std::array<std::vector<c10::StreamId>, 2> pool;
  std::array<unsigned, 2> next{0, 0};
};

std::mutex registry_mutex;

std::vector<DeviceStreams>& registry() {
  static std::vector<DeviceStreams> devices(device_count());
  return devices;
}

thread_local std::vector<c10::StreamId> current_ids;

c10::Stream make(c10::DeviceIndex device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), id);
}

int clamp_priority(int priority) {
  auto [least, greatest] = driver().priorityRange();
  return std::max(greatest, std::min(least, priority));
}

c10::StreamId register_stream(c10::DeviceIndex device, int priority) {
  priority = clamp_priority(priority);
  StreamHandle handle = driver().createStream(device, priority);
  auto& streams = registry()[device].streams;
  streams.push_back({handle, priority});
  return static_cast<c10::StreamId>(streams.size());
}

const StreamRecord& record(c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "expected a privateuseone stream, got ", stream);
  check_device_index(stream.device_index());
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& streams = registry()[stream.device_index()].streams;
  TORCH_CHECK(stream.id() >= 1 && stream.id() <= static_cast<c10::StreamId>(streams.size()),
              "unknown privateuseone stream id ", stream.id());
  return streams[stream.id() - 1];
}

}  // namespace

c10::Stream getDefaultStream(c10::DeviceIndex device) { return make(resolve_device(device), 0); }

c10::Stream getCurrentStream(c10::DeviceIndex device) {
  device = resolve_device(device);
  if (current_ids.size() <= static_cast<size_t>(device)) return make(device, 0);
  return make(device, current_ids[device]);
}

void setCurrentStream(c10::Stream stream) {
  if (stream.id() != 0) record(stream);  // validates
  auto device = resolve_device(stream.device_index());
  if (current_ids.size() <= static_cast<size_t>(device)) current_ids.resize(device + 1, 0);
  current_ids[device] = stream.id();
}

c10::Stream getStreamFromPool(c10::DeviceIndex device, int priority) {
  device = resolve_device(device);
  int level = clamp_priority(priority) < 0 ? 1 : 0;
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& d = registry()[device];
  auto& pool = d.pool[level];
  if (pool.empty()) {
    for (int i = 0; i < kPoolSize; ++i) pool.push_back(register_stream(device, level ? -1 : 0));
  }
  return make(device, pool[d.next[level]++ % kPoolSize]);
}

c10::Stream getNewStream(c10::DeviceIndex device, int priority) {
  device = resolve_device(device);
  std::lock_guard<std::mutex> lock(registry_mutex);
  return make(device, register_stream(device, priority));
}

StreamHandle driverStream(c10::Stream stream) {
  if (stream.id() == 0) return nullptr;
  return record(stream).handle;
}

int streamPriority(c10::Stream stream) {
  if (stream.id() == 0) return 0;
  return record(stream).priority;
}

c10::Stream streamFromId(c10::DeviceIndex device, c10::StreamId id) {
  auto stream = make(resolve_device(device), id);
  if (id != 0) record(stream);
  return stream;
}

}  // namespace torch_ext::runtime
