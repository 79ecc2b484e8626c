// The `cuda` driver: device memory, copies, streams and events through the
// CUDA driver API, loaded from libcuda.so.1 at run time (CudaApi.h). Every
// device works in its primary context, the one Triton and torch.cuda use too,
// so pointers, streams and modules are shared with them.

#include "launch/Plan.h"
#include "runtime/CudaApi.h"
#include "runtime/CudaDriver.h"

#include <c10/util/Exception.h>
#include <dlfcn.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace torch_ext::cuda {

const Api* api() noexcept {
  static const Api* loaded = []() -> const Api* {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto* a = new Api();  // leaked: used until the process exits
    bool complete = true;
#define TORCH_EXT_CUDA_RESOLVE(name, symbol, type)                          \
  a->name = reinterpret_cast<std::add_pointer_t<type>>(dlsym(lib, symbol)); \
  complete = complete && a->name != nullptr;
    TORCH_EXT_CUDA_FUNCTIONS(TORCH_EXT_CUDA_RESOLVE)
#undef TORCH_EXT_CUDA_RESOLVE
    // cuEventElapsedTime changed its ABI in CUDA 12.8; prefer the new entry.
    if (auto v2 = dlsym(lib, "cuEventElapsedTime_v2")) {
      a->cuEventElapsedTime = reinterpret_cast<decltype(a->cuEventElapsedTime)>(v2);
    }
    a->cuFuncGetParamInfo =
        reinterpret_cast<decltype(a->cuFuncGetParamInfo)>(dlsym(lib, "cuFuncGetParamInfo"));
    if (!complete || a->cuInit(0) != CUDA_SUCCESS) return nullptr;
    return a;
  }();
  return loaded;
}

std::string describe(CUresult result, const char* what) {
  const char* text = nullptr;
  const char* name = nullptr;
  if (const Api* a = api()) {
    a->cuGetErrorString(result, &text);
    a->cuGetErrorName(result, &name);
  }
  return std::string("CUDA driver call ") + what + " failed: " + (text ? text : "unknown error") +
         " (" + (name ? name : "CUresult " + std::to_string(result)) + ")";
}

}  // namespace torch_ext::cuda

namespace torch_ext::runtime {
namespace {

using namespace torch_ext::cuda;

inline CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
inline CUstream cu(StreamHandle s) { return static_cast<CUstream>(s); }
inline CUevent cu_event(EventHandle e) { return static_cast<CUevent>(e); }

class CudaDriver final : public Driver {
 public:
  CudaDriver(const Api& api, int count) : api_(api), contexts_(count) {
    for (int i = 0; i < count; ++i)
      TORCH_EXT_CUDA_CHECK(api_.cuDeviceGet(&devices_.emplace_back(), i));
  }

  const char* name() const override { return "cuda"; }
  int deviceCount() const noexcept override { return static_cast<int>(devices_.size()); }

  DeviceProperties properties(int device) override {
    check_index(device);
    CUdevice d = devices_[device];
    DeviceProperties p;
    char name[256] = {0};
    TORCH_EXT_CUDA_CHECK(api_.cuDeviceGetName(name, sizeof(name) - 1, d));
    p.name = name;
    TORCH_EXT_CUDA_CHECK(api_.cuDeviceTotalMem(&p.total_memory, d));
    TORCH_EXT_CUDA_CHECK(api_.cuDeviceGetAttribute(&p.multi_processor_count,
                                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
    TORCH_EXT_CUDA_CHECK(
        api_.cuDeviceGetAttribute(&p.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    TORCH_EXT_CUDA_CHECK(
        api_.cuDeviceGetAttribute(&p.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d));
    return p;
  }

  void* malloc(int device, size_t bytes) override {
    use(device);
    CUdeviceptr p = 0;
    CUresult r = api_.cuMemAlloc(&p, bytes == 0 ? 1 : bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    TORCH_CHECK(r == CUDA_SUCCESS, describe(r, "cuMemAlloc_v2"));
    return reinterpret_cast<void*>(p);
  }

  void free(int device, void* ptr) override {
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuMemFree(dptr(ptr)));
  }

  std::pair<size_t, size_t> memInfo(int device) override {
    use(device);
    size_t free_bytes = 0, total = 0;
    TORCH_EXT_CUDA_CHECK(api_.cuMemGetInfo(&free_bytes, &total));
    return {free_bytes, total};
  }

  void* hostMalloc(size_t bytes) override {
    use(0);
    void* p = nullptr;
    CUresult r = api_.cuMemHostAlloc(&p, bytes == 0 ? 1 : bytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    TORCH_CHECK(r == CUDA_SUCCESS, describe(r, "cuMemHostAlloc"));
    return p;
  }

  void hostFree(void* ptr) override {
    use(0);
    TORCH_EXT_CUDA_CHECK(api_.cuMemFreeHost(ptr));
  }

  void memcpy(void* dst, const void* src, size_t bytes, CopyKind kind, int device,
              StreamHandle stream, bool async) override {
    if (bytes == 0) return;
    launch::plan::note_copy(dst, src, bytes, kind == CopyKind::DeviceToDevice);
    use(device);
    switch (kind) {
      case CopyKind::HostToDevice:
        TORCH_EXT_CUDA_CHECK(api_.cuMemcpyHtoDAsync(dptr(dst), src, bytes, cu(stream)));
        break;
      case CopyKind::DeviceToHost:
        TORCH_EXT_CUDA_CHECK(api_.cuMemcpyDtoHAsync(dst, dptr(src), bytes, cu(stream)));
        break;
      case CopyKind::DeviceToDevice:
        TORCH_EXT_CUDA_CHECK(api_.cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, cu(stream)));
        break;
    }
    if (!async) TORCH_EXT_CUDA_CHECK(api_.cuStreamSynchronize(cu(stream)));
  }

  void memcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                  StreamHandle stream) override {
    if (bytes == 0) return;
    launch::plan::note_unreplayable("peer copy");
    CUcontext src_ctx = context(src_device);
    use(dst_device);
    TORCH_EXT_CUDA_CHECK(api_.cuMemcpyPeerAsync(dptr(dst), context(dst_device), dptr(src), src_ctx,
                                                bytes, cu(stream)));
  }

  void memset(void* dst, int value, size_t bytes, int device, StreamHandle stream) override {
    if (bytes == 0) return;
    launch::plan::note_memset(dst, value, bytes);
    use(device);
    TORCH_EXT_CUDA_CHECK(
        api_.cuMemsetD8Async(dptr(dst), static_cast<unsigned char>(value), bytes, cu(stream)));
  }

  std::pair<int, int> priorityRange() const override {
    std::call_once(priority_once_, [this] {
      const_cast<CudaDriver*>(this)->use(0);
      TORCH_EXT_CUDA_CHECK(api_.cuCtxGetStreamPriorityRange(&priority_least_, &priority_greatest_));
    });
    return {priority_least_, priority_greatest_};
  }

  StreamHandle createStream(int device, int priority) override {
    use(device);
    CUstream s = nullptr;
    TORCH_EXT_CUDA_CHECK(api_.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority));
    return s;
  }

  void destroyStream(int device, StreamHandle stream) override {
    if (!stream) return;
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuStreamDestroy(cu(stream)));
  }

  bool queryStream(int device, StreamHandle stream) override {
    use(device);
    return ready(api_.cuStreamQuery(cu(stream)), "cuStreamQuery");
  }

  void synchronizeStream(int device, StreamHandle stream) override {
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuStreamSynchronize(cu(stream)));
  }

  void synchronizeDevice(int device) override {
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuCtxSynchronize());
  }

  EventHandle createEvent(int device, bool enable_timing) override {
    use(device);
    CUevent e = nullptr;
    TORCH_EXT_CUDA_CHECK(
        api_.cuEventCreate(&e, enable_timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
    return e;
  }

  void destroyEvent(int device, EventHandle event) override {
    if (!event) return;
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuEventDestroy(cu_event(event)));
  }

  void recordEvent(int device, EventHandle event, StreamHandle stream) override {
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuEventRecord(cu_event(event), cu(stream)));
  }

  void streamWaitEvent(int device, StreamHandle stream, EventHandle event) override {
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuStreamWaitEvent(cu(stream), cu_event(event), 0));
  }

  bool queryEvent(int device, EventHandle event) override {
    use(device);
    return ready(api_.cuEventQuery(cu_event(event)), "cuEventQuery");
  }

  void synchronizeEvent(int device, EventHandle event) override {
    use(device);
    TORCH_EXT_CUDA_CHECK(api_.cuEventSynchronize(cu_event(event)));
  }

  double elapsedMs(int device, EventHandle start, EventHandle end) override {
    use(device);
    float ms = 0;
    TORCH_EXT_CUDA_CHECK(api_.cuEventElapsedTime(&ms, cu_event(start), cu_event(end)));
    return ms;
  }

  bool hostAddressable() const override { return false; }

  // Makes `device`'s primary context current on this thread (the calling
  // thread may be new, or another library may have switched contexts).
  void use(int device) {
    CUcontext ctx = context(device);
    CUcontext current = nullptr;
    TORCH_EXT_CUDA_CHECK(api_.cuCtxGetCurrent(&current));
    if (current != ctx) TORCH_EXT_CUDA_CHECK(api_.cuCtxSetCurrent(ctx));
  }

 private:
  void check_index(int device) const {
    TORCH_CHECK(device >= 0 && device < deviceCount(),
                "torch_ext cuda driver: invalid device index ", device, " (", deviceCount(),
                " device(s))");
  }

  CUcontext context(int device) {
    check_index(device);
    CUcontext ctx = contexts_[device].load(std::memory_order_acquire);
    if (ctx) return ctx;
    std::lock_guard<std::mutex> lock(mutex_);
    ctx = contexts_[device].load(std::memory_order_relaxed);
    if (!ctx) {
      TORCH_EXT_CUDA_CHECK(api_.cuDevicePrimaryCtxRetain(&ctx, devices_[device]));
      contexts_[device].store(ctx, std::memory_order_release);
    }
    return ctx;
  }

  bool ready(CUresult r, const char* what) {
    if (r == CUDA_ERROR_NOT_READY) return false;
    TORCH_CHECK(r == CUDA_SUCCESS, describe(r, what));
    return true;
  }

  const Api& api_;
  std::vector<CUdevice> devices_;
  std::vector<std::atomic<CUcontext>> contexts_;  // primary contexts, retained on first use
  std::mutex mutex_;
  mutable std::once_flag priority_once_;
  mutable int priority_least_ = 0;
  mutable int priority_greatest_ = 0;
};

}  // namespace

std::unique_ptr<Driver> make_cuda_driver() {
  const Api* a = api();
  if (!a) return nullptr;
  int count = 0;
  if (a->cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) return nullptr;
  return std::make_unique<CudaDriver>(*a, count);
}

void make_current(Driver& driver, int device) {
  if (auto* cuda_driver = dynamic_cast<CudaDriver*>(&driver)) cuda_driver->use(device);
}

}  // namespace torch_ext::runtime
