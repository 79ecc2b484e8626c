#pragma once
// The one interface between the runtime and the hardware. Everything above it
// (allocator, guard, streams, events, copies, hooks) is driver-independent.
// A driver receives explicit device indices; the "current device" is runtime
// state (Device.h), not driver state.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace torch_ext::runtime {

using StreamHandle = void*;  // nullptr is the device's default stream
using EventHandle = void*;

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };

struct DeviceProperties {
  std::string name;
  size_t total_memory = 0;
  int multi_processor_count = 0;
  int major = 0;
  int minor = 0;
};

struct Driver {
  virtual ~Driver() = default;

  // "host" or "cuda".
  virtual const char* name() const = 0;
  // Never throws; 0 when nothing is usable.
  virtual int deviceCount() const noexcept = 0;
  virtual DeviceProperties properties(int device) = 0;

  // Memory. malloc returns nullptr when the device is out of memory.
  virtual void* malloc(int device, size_t bytes) = 0;
  virtual void free(int device, void* ptr) = 0;
  // {free, total} bytes.
  virtual std::pair<size_t, size_t> memInfo(int device) = 0;
  // Page-locked host memory for asynchronous copies.
  virtual void* hostMalloc(size_t bytes) = 0;
  virtual void hostFree(void* ptr) = 0;

  // Copies are ordered on `stream` of `device`; when `async` is false the call
  // returns after the copy is complete.
  virtual void memcpy(void* dst, const void* src, size_t bytes, CopyKind kind, int device,
                      StreamHandle stream, bool async) = 0;
  // Copy between two devices (peer copy), ordered on `stream` of dst_device.
  virtual void memcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                          StreamHandle stream) = 0;
  virtual void memset(void* dst, int value, size_t bytes, int device, StreamHandle stream) = 0;

  // Streams. Lower numbers are higher priorities (as in CUDA).
  virtual std::pair<int, int> priorityRange() const = 0;  // {least, greatest}
  virtual StreamHandle createStream(int device, int priority) = 0;
  virtual void destroyStream(int device, StreamHandle stream) = 0;
  virtual bool queryStream(int device, StreamHandle stream) = 0;
  virtual void synchronizeStream(int device, StreamHandle stream) = 0;
  virtual void synchronizeDevice(int device) = 0;

  // Events.
  virtual EventHandle createEvent(int device, bool enable_timing) = 0;
  virtual void destroyEvent(int device, EventHandle event) = 0;
  virtual void recordEvent(int device, EventHandle event, StreamHandle stream) = 0;
  virtual void streamWaitEvent(int device, StreamHandle stream, EventHandle event) = 0;
  virtual bool queryEvent(int device, EventHandle event) = 0;
  virtual void synchronizeEvent(int device, EventHandle event) = 0;
  virtual double elapsedMs(int device, EventHandle start, EventHandle end) = 0;

  // Whether host code may read device memory directly (host driver without
  // protection). Kernels then run on aliases instead of staging copies.
  virtual bool hostAddressable() const = 0;
};

// The driver chosen at first use from TORCH_EXT_DRIVER=auto|host|cuda
// (auto: cuda when make_cuda_driver() finds a usable GPU, else host).
Driver& driver();

// Factories. make_cuda_driver returns nullptr when no usable GPU (or no
// libcuda.so.1) is found; defined in CudaDriver.cpp.
std::unique_ptr<Driver> make_host_driver();
std::unique_ptr<Driver> make_cuda_driver();

}  // namespace torch_ext::runtime
