// Caching device allocator. Blocks are whole driver allocations (no
// splitting); a freed block goes to the cache of its (device, stream) and is
// reused by a later request of the same stream whose rounded size fits without
// wasting more than half the block. A block used on other streams
// (recordStream) is cached only once events recorded on those streams at free
// time have completed. When the driver runs out, the cache of the device is
// released and the allocation retried once before OutOfMemoryError.
#include "launch/Plan.h"
#include "runtime/Allocator.h"

#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Stream.h"

#include <ATen/core/CachingHostAllocator.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace torch_ext::runtime {
namespace {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

constexpr size_t kSmallSize = 1 << 20;  // requests up to 1 MiB are "small"
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = 1 << 20;

size_t round_size(size_t bytes) {
  size_t unit = bytes <= kSmallSize ? kSmallRound : kLargeRound;
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

struct Block {
  c10::DeviceIndex device;
  c10::StreamId stream;  // allocation stream
  size_t size;           // rounded
  size_t requested = 0;
  void* ptr;
  bool allocated = false;
  std::set<c10::StreamId> stream_uses;
  std::vector<EventHandle> pending_events;
};

std::string format_bytes(size_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30))
    snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  else if (bytes >= (1ull << 20))
    snprintf(buf, sizeof buf, "%.2f MiB", bytes / double(1ull << 20));
  else if (bytes >= 1024)
    snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  else
    snprintf(buf, sizeof buf, "%zu bytes", bytes);
  return buf;
}

class DeviceCachingAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    auto device = current_device();
    c10::Device dev(c10::DeviceType::PrivateUse1, device);
    if (bytes == 0) return c10::DataPtr(nullptr, dev);
    auto stream = getCurrentStream(device).id();
    Block* block = malloc_block(device, stream, bytes);
    launch::plan::note_alloc(block->ptr, bytes);
    return c10::DataPtr(block->ptr, block, &free_block_fn, dev);
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  void copy_data(void* dst, const void* src, size_t count) const override {
    driver().memcpy(dst, src, count, CopyKind::DeviceToDevice, current_device(),
                    driverStream(getCurrentStream(current_device())), false);
  }

  bool initialized() override { return true; }

  // Both signatures, without `override`: torch 2.13 has emptyCache(MempoolId_t)
  // and older releases emptyCache(); whichever the base declares is overridden.
  void emptyCache(c10::MempoolId_t) { emptyCache(); }
  void emptyCache() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (c10::DeviceIndex d = 0; d < static_cast<c10::DeviceIndex>(devices().size()); ++d)
      release_cache(d);
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (!ptr.get()) return;
    TORCH_CHECK(ptr.get_deleter() == &free_block_fn,
                "recordStream: pointer was not allocated by torch_ext");
    std::lock_guard<std::mutex> lock(mutex_);
    auto* block = static_cast<Block*>(ptr.get_context());
    if (stream.id() != block->stream) block->stream_uses.insert(stream.id());
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return state(resolve_device(device)).stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& s = state(resolve_device(device)).stats;
    for (StatArray* a : stat_arrays(s)) {
      for (auto& stat : *a) {
        stat.allocated = 0;
        stat.freed = 0;
      }
    }
    s.num_alloc_retries = 0;
    s.num_ooms = 0;
    s.num_device_alloc = 0;
    s.num_device_free = 0;
    s.num_sync_all_streams = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& s = state(resolve_device(device)).stats;
    for (StatArray* a : stat_arrays(s)) {
      for (auto& stat : *a) stat.peak = stat.current;
    }
  }

  // Not `override`: older releases' DeviceAllocator lacks it.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) {
    return driver().memInfo(resolve_device(device));
  }

  std::optional<c10::DeviceIndex> deviceOf(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = segments_.upper_bound(p);
    if (it == segments_.begin()) return std::nullopt;
    --it;
    if (p >= it->first + it->second->size) return std::nullopt;
    return it->second->device;
  }

 private:
  struct DeviceState {
    DeviceStats stats;
    // Cached blocks by (stream, size).
    std::map<std::pair<c10::StreamId, size_t>, std::vector<Block*>> cache;
    std::vector<Block*> pending;  // freed, waiting for recorded streams
  };

  static void free_block_fn(void* ctx);

  static std::vector<StatArray*> stat_arrays(DeviceStats& s) {
    return {&s.allocation,      &s.segment,        &s.active,       &s.inactive_split,
            &s.allocated_bytes, &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes,
            &s.requested_bytes};
  }

  std::vector<DeviceState>& devices() {
    if (devices_.empty()) devices_.resize(std::max<int>(device_count(), 1));
    return devices_;
  }
  DeviceState& state(c10::DeviceIndex d) { return devices()[d]; }

  static void update(StatArray& a, size_t size, int64_t delta) {
    auto pool =
        static_cast<size_t>(size <= kSmallSize ? StatType::SMALL_POOL : StatType::LARGE_POOL);
    for (size_t i : {static_cast<size_t>(StatType::AGGREGATE), pool}) {
      if (delta >= 0)
        a[i].increase(delta);
      else
        a[i].decrease(-delta);
    }
  }

  Block* malloc_block(c10::DeviceIndex device, c10::StreamId stream, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& st = state(device);
    process_pending(st);
    size_t size = round_size(bytes);
    Block* block = take_cached(st, stream, size);
    if (!block) {
      void* ptr = driver().malloc(device, size);
      if (!ptr) {
        st.stats.num_alloc_retries++;
        release_cache(device);
        ptr = driver().malloc(device, size);
      }
      if (!ptr) {
        st.stats.num_ooms++;
        auto [free, total] = driver().memInfo(device);
        size_t allocated = st.stats.allocated_bytes[0].current;
        size_t reserved = st.stats.reserved_bytes[0].current;
        TORCH_CHECK_WITH(OutOfMemoryError, false, "privateuseone out of memory. Tried to allocate ",
                         format_bytes(size), ". Device ", static_cast<int>(device), " (",
                         driver().name(), " driver) has a total capacity of ", format_bytes(total),
                         " of which ", format_bytes(free), " is free. Of the allocated memory ",
                         format_bytes(allocated), " is allocated by torch_ext, and ",
                         format_bytes(reserved - allocated),
                         " is reserved by torch_ext but unallocated.");
      }
      block = new Block{device, stream, size, 0, ptr};
      segments_[reinterpret_cast<uintptr_t>(ptr)] = block;
      st.stats.num_device_alloc++;
      update(st.stats.segment, size, 1);
      update(st.stats.reserved_bytes, size, size);
    }
    block->allocated = true;
    block->requested = bytes;
    size = block->size;  // a cached block may be up to twice the rounded request
    update(st.stats.allocation, size, 1);
    update(st.stats.active, size, 1);
    update(st.stats.allocated_bytes, size, size);
    update(st.stats.active_bytes, size, size);
    update(st.stats.requested_bytes, size, bytes);
    return block;
  }

  Block* take_cached(DeviceState& st, c10::StreamId stream, size_t size) {
    auto it = st.cache.lower_bound({stream, size});
    if (it == st.cache.end() || it->first.first != stream || it->first.second > 2 * size)
      return nullptr;
    Block* block = it->second.back();
    it->second.pop_back();
    if (it->second.empty()) st.cache.erase(it);
    return block;
  }

  void free_block(Block* block) {
    launch::plan::note_free(block->ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& st = state(block->device);
    block->allocated = false;
    update(st.stats.allocation, block->size, -1);
    update(st.stats.allocated_bytes, block->size, -static_cast<int64_t>(block->size));
    update(st.stats.requested_bytes, block->size, -static_cast<int64_t>(block->requested));
    if (!block->stream_uses.empty()) {
      for (auto id : block->stream_uses) {
        auto s = streamFromId(block->device, id);
        EventHandle ev = driver().createEvent(block->device, false);
        driver().recordEvent(block->device, ev, driverStream(s));
        block->pending_events.push_back(ev);
      }
      block->stream_uses.clear();
      st.pending.push_back(block);
      process_pending(st);
      return;
    }
    deactivate(st, block);
  }

  void deactivate(DeviceState& st, Block* block) {
    update(st.stats.active, block->size, -1);
    update(st.stats.active_bytes, block->size, -static_cast<int64_t>(block->size));
    st.cache[{block->stream, block->size}].push_back(block);
  }

  void process_pending(DeviceState& st) {
    std::vector<Block*> still;
    for (Block* b : st.pending) {
      bool done = true;
      for (EventHandle ev : b->pending_events) done = done && driver().queryEvent(b->device, ev);
      if (!done) {
        still.push_back(b);
        continue;
      }
      for (EventHandle ev : b->pending_events) driver().destroyEvent(b->device, ev);
      b->pending_events.clear();
      deactivate(st, b);
    }
    st.pending.swap(still);
  }

  void release_cache(c10::DeviceIndex device) {
    auto& st = state(device);
    for (Block* b : st.pending) {
      for (EventHandle ev : b->pending_events) {
        driver().synchronizeEvent(device, ev);
      }
    }
    process_pending(st);
    for (auto& [key, blocks] : st.cache) {
      for (Block* b : blocks) {
        driver().free(device, b->ptr);
        st.stats.num_device_free++;
        update(st.stats.segment, b->size, -1);
        update(st.stats.reserved_bytes, b->size, -static_cast<int64_t>(b->size));
        segments_.erase(reinterpret_cast<uintptr_t>(b->ptr));
        delete b;
      }
    }
    st.cache.clear();
  }

  std::mutex mutex_;
  std::vector<DeviceState> devices_;
  std::map<uintptr_t, Block*> segments_;
};

DeviceCachingAllocator device_allocator;

void DeviceCachingAllocator::free_block_fn(void* ctx) {
  device_allocator.free_block(static_cast<Block*>(ctx));
}

// Pinned host memory: not cached (pinned memory is costly to keep and the
// host driver's "pinned" memory is ordinary RAM); each region is remembered
// for isPinnedPtr.
class PinnedAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    void* ptr = bytes ? driver().hostMalloc(bytes) : nullptr;
    if (bytes) {
      TORCH_CHECK_WITH(OutOfMemoryError, ptr, "torch_ext: cannot allocate ", format_bytes(bytes),
                       " of pinned host memory");
      std::lock_guard<std::mutex> lock(mutex_);
      regions_[reinterpret_cast<uintptr_t>(ptr)] = bytes;
      stats_.allocations.increase(1);
      stats_.allocated_bytes.increase(bytes);
    }
    return c10::DataPtr(ptr, ptr, &free_fn, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_fn; }
  void copy_data(void* dst, const void* src, size_t count) const override {
    std::memcpy(dst, src, count);
  }

  // Frees are synchronous with respect to the device (drivers' hostFree
  // waits), so no events are needed.
  bool record_event(void*, void*, c10::Stream) override { return true; }
  void empty_cache() override {}
  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}

  bool contains(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = regions_.upper_bound(p);
    if (it == regions_.begin()) return false;
    --it;
    return p < it->first + it->second;
  }

 private:
  static void free_fn(void* ptr);
  void release(void* ptr) {
    if (!ptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
      if (it != regions_.end()) {
        stats_.allocations.decrease(1);
        stats_.allocated_bytes.decrease(it->second);
        regions_.erase(it);
      }
    }
    driver().hostFree(ptr);
  }

  std::mutex mutex_;
  std::map<uintptr_t, size_t> regions_;
  at::HostStats stats_;
};

PinnedAllocator pinned_allocator;
void PinnedAllocator::free_fn(void* ptr) { pinned_allocator.release(ptr); }

}  // namespace

c10::DeviceAllocator& deviceAllocator() { return device_allocator; }
at::Allocator& pinnedAllocator() { return pinned_allocator; }
std::optional<c10::DeviceIndex> deviceOfPointer(const void* ptr) {
  return device_allocator.deviceOf(ptr);
}
bool isPinnedPointer(const void* ptr) { return pinned_allocator.contains(ptr); }

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &device_allocator)
REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &pinned_allocator)

}  // namespace torch_ext::runtime
