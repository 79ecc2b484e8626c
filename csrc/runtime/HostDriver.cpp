// The `host` driver: device memory is host RAM. Work is done eagerly, so
// streams are always idle and an event is complete once recorded (it keeps
// the time it was recorded, for elapsed time).
//
// (read through runtime/Config.h)
//   TORCH_EXT_HOST_DEVICES=N          simulated devices (default 1)
//   TORCH_EXT_HOST_MEMORY_LIMIT=2G    bytes per device (suffixes K/M/G/T)
//   TORCH_EXT_HOST_PROTECT=1          device pages are PROT_NONE except while
//                                     this driver copies or sets them, so host
//                                     code that reads device memory crashes.
#include "launch/Plan.h"
#include "runtime/Config.h"
#include "runtime/Driver.h"

#include <c10/util/Exception.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace torch_ext::runtime {
namespace {

size_t physical_memory() {
  return static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct HostEvent {
  double time_ms = 0;
};

class HostDriver final : public Driver {
 public:
  HostDriver() {
    devices_ = config::host_devices();
    limit_ = config::host_memory_limit().value_or(physical_memory());
    protect_ = config::host_protect();
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    used_ = std::vector<size_t>(devices_, 0);
  }

  const char* name() const override { return "host"; }
  int deviceCount() const noexcept override { return devices_; }

  DeviceProperties properties(int device) override {
    DeviceProperties p;
    p.name = "torch_ext host device " + std::to_string(device) + (protect_ ? " (protected)" : "");
    p.total_memory = limit_;
    p.multi_processor_count = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    return p;
  }

  void* malloc(int device, size_t bytes) override {
    size_t mapped = round_pages(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (used_[device] + mapped > limit_) return nullptr;
    void* ptr = mmap(nullptr, mapped, protect_ ? PROT_NONE : PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) return nullptr;
    used_[device] += mapped;
    regions_[reinterpret_cast<uintptr_t>(ptr)] = Region{mapped, device};
    return ptr;
  }

  void free(int device, void* ptr) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = regions_.find(reinterpret_cast<uintptr_t>(ptr));
    TORCH_INTERNAL_ASSERT(it != regions_.end(), "host driver: free of unknown pointer");
    munmap(ptr, it->second.bytes);
    used_[it->second.device] -= it->second.bytes;
    regions_.erase(it);
  }

  std::pair<size_t, size_t> memInfo(int device) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return {limit_ - used_[device], limit_};
  }

  void* hostMalloc(size_t bytes) override { return std::malloc(bytes ? bytes : 1); }
  void hostFree(void* ptr) override { std::free(ptr); }

  void memcpy(void* dst, const void* src, size_t bytes, CopyKind kind, int, StreamHandle,
              bool) override {
    if (bytes) launch::plan::note_copy(dst, src, bytes, kind == CopyKind::DeviceToDevice);
    copy(dst, src, bytes);
  }
  void memcpyPeer(void* dst, int, const void* src, int, size_t bytes, StreamHandle) override {
    if (bytes) launch::plan::note_unreplayable("peer copy");
    copy(dst, src, bytes);
  }
  void memset(void* dst, int value, size_t bytes, int, StreamHandle) override {
    if (bytes == 0) return;
    launch::plan::note_memset(dst, value, bytes);
    Unprotect open(*this, dst, bytes);
    std::memset(dst, value, bytes);
  }

  std::pair<int, int> priorityRange() const override { return {0, -1}; }
  StreamHandle createStream(int, int) override {
    // Handles only need to be distinct and non-null.
    return reinterpret_cast<StreamHandle>(next_stream_.fetch_add(1));
  }
  void destroyStream(int, StreamHandle) override {}
  bool queryStream(int, StreamHandle) override { return true; }
  void synchronizeStream(int, StreamHandle) override {}
  void synchronizeDevice(int) override {}

  EventHandle createEvent(int, bool) override { return new HostEvent; }
  void destroyEvent(int, EventHandle event) override { delete static_cast<HostEvent*>(event); }
  void recordEvent(int, EventHandle event, StreamHandle) override {
    static_cast<HostEvent*>(event)->time_ms = now_ms();
  }
  void streamWaitEvent(int, StreamHandle, EventHandle) override {}
  bool queryEvent(int, EventHandle) override { return true; }
  void synchronizeEvent(int, EventHandle) override {}
  double elapsedMs(int, EventHandle start, EventHandle end) override {
    return static_cast<HostEvent*>(end)->time_ms - static_cast<HostEvent*>(start)->time_ms;
  }

  bool hostAddressable() const override { return !protect_; }

 private:
  struct Region {
    size_t bytes;
    int device;
  };

  // Opens the device pages under [ptr, ptr+bytes) for the lifetime of the
  // object; a no-op for host pointers and when protection is off. Holds the
  // protection lock so that concurrent copies cannot close each other's pages.
  class Unprotect {
   public:
    Unprotect(HostDriver& d, const void* ptr, size_t bytes) : d_(d) {
      if (!d_.protect_) return;
      lock_ = std::unique_lock<std::recursive_mutex>(d_.protect_mutex_);
      uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
      std::lock_guard<std::mutex> regions(d_.mutex_);
      auto it = d_.regions_.upper_bound(p);
      if (it == d_.regions_.begin()) return;
      --it;
      if (p >= it->first + it->second.bytes) return;  // not device memory
      begin_ = p & ~(d_.page_ - 1);
      end_ = std::min(it->first + it->second.bytes, (p + bytes + d_.page_ - 1) & ~(d_.page_ - 1));
      mprotect(reinterpret_cast<void*>(begin_), end_ - begin_, PROT_READ | PROT_WRITE);
    }
    ~Unprotect() {
      if (end_ > begin_) mprotect(reinterpret_cast<void*>(begin_), end_ - begin_, PROT_NONE);
    }

   private:
    HostDriver& d_;
    std::unique_lock<std::recursive_mutex> lock_;
    uintptr_t begin_ = 0, end_ = 0;
  };

  void copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    Unprotect open_src(*this, src, bytes);
    Unprotect open_dst(*this, dst, bytes);
    std::memmove(dst, src, bytes);
  }

  size_t round_pages(size_t bytes) const {
    return ((bytes ? bytes : 1) + page_ - 1) / page_ * page_;
  }

  int devices_ = 1;
  size_t limit_ = 0;
  bool protect_ = false;
  size_t page_ = 4096;
  std::mutex mutex_;
  std::recursive_mutex protect_mutex_;
  std::vector<size_t> used_;
  std::map<uintptr_t, Region> regions_;
  std::atomic<uintptr_t> next_stream_{1};
};

}  // namespace

std::unique_ptr<Driver> make_host_driver() { return std::make_unique<HostDriver>(); }

}  // namespace torch_ext::runtime
