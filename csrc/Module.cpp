// torch_ext._C: the Python side of the runtime.
#include "aten/Fallback.h"
#include "distributed/GlooBridge.h"
#include "launch/Plan.h"
#include "runtime/Allocator.h"
#include "runtime/Config.h"
#include "runtime/CudaBindings.h"
#include "runtime/Device.h"
#include "runtime/Driver.h"
#include "runtime/Generator.h"
#include "runtime/Stream.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/from_blob.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace torch_ext {
namespace {

using namespace runtime;
using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;

// torch.cuda.memory_stats()-shaped flat dict.
py::dict memory_stats(c10::DeviceIndex device) {
  auto s = deviceAllocator().getDeviceStats(resolve_device(device));
  py::dict out;
  const char* pools[] = {"all", "small_pool", "large_pool"};
  auto add_stat = [&](const std::string& prefix, const Stat& stat) {
    out[py::str(prefix + ".current")] = stat.current;
    out[py::str(prefix + ".peak")] = stat.peak;
    out[py::str(prefix + ".allocated")] = stat.allocated;
    out[py::str(prefix + ".freed")] = stat.freed;
  };
  auto add_array = [&](const std::string& name, const StatArray& a) {
    for (size_t i = 0; i < a.size(); ++i) add_stat(name + "." + pools[i], a[i]);
  };
  add_array("allocation", s.allocation);
  add_array("segment", s.segment);
  add_array("active", s.active);
  add_array("inactive_split", s.inactive_split);
  add_array("allocated_bytes", s.allocated_bytes);
  add_array("reserved_bytes", s.reserved_bytes);
  add_array("active_bytes", s.active_bytes);
  add_array("inactive_split_bytes", s.inactive_split_bytes);
  add_array("requested_bytes", s.requested_bytes);
  add_stat("oversize_allocations", s.oversize_allocations);
  add_stat("oversize_segments", s.oversize_segments);
  out["num_alloc_retries"] = s.num_alloc_retries;
  out["num_ooms"] = s.num_ooms;
  out["num_sync_all_streams"] = s.num_sync_all_streams;
  out["num_device_alloc"] = s.num_device_alloc;
  out["num_device_free"] = s.num_device_free;
  out["max_split_size"] = s.max_split_size;
  return out;
}

// A CPU tensor over the same memory as a device tensor (same sizes, strides
// and storage offset); it keeps the device storage alive.
at::Tensor host_alias(const at::Tensor& t) {
  TORCH_CHECK(t.is_privateuseone(), "_host_alias expects a privateuseone tensor, got ", t.device());
  TORCH_CHECK(driver().hostAddressable(), "_host_alias: the ", driver().name(),
              " driver's memory is not host-addressable",
              std::string(driver().name()) == "host" ? " (TORCH_EXT_HOST_PROTECT=1)" : "");
  c10::Storage storage = t.storage();
  void* base = storage.mutable_data();
  return at::for_blob(base, t.sizes())
      .strides(t.strides())
      .storage_offset(t.storage_offset())
      .context(new c10::Storage(storage), [](void* ctx) { delete static_cast<c10::Storage*>(ctx); })
      .options(t.options().device(at::kCPU))
      .target_device(c10::Device(at::kCPU))
      .make_tensor();
}

c10::Stream stream_of(int64_t device, int64_t id) {
  return streamFromId(static_cast<c10::DeviceIndex>(device), static_cast<c10::StreamId>(id));
}

}  // namespace
}  // namespace torch_ext

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace torch_ext;
  using namespace torch_ext::runtime;
  m.doc() = "torch_ext runtime";

  m.def("_driver_name", [] { return std::string(driver().name()); });
  m.def("_driver_host_addressable", [] { return driver().hostAddressable(); });

  // Devices.
  m.def("_device_count", [] { return static_cast<int64_t>(device_count()); });
  m.def("_current_device", [] { return static_cast<int64_t>(current_device()); });
  m.def("_set_device", [](int64_t d) { set_device(static_cast<c10::DeviceIndex>(d)); });
  m.def("_check_device", [](int64_t d) { check_device_index(static_cast<c10::DeviceIndex>(d)); });
  m.def("_synchronize", [](int64_t d) {
    py::gil_scoped_release nogil;
    driver().synchronizeDevice(resolve_device(static_cast<c10::DeviceIndex>(d)));
  });
  m.def("_device_properties", [](int64_t d) {
    auto p = driver().properties(resolve_device(static_cast<c10::DeviceIndex>(d)));
    return py::make_tuple(p.name, p.total_memory, p.multi_processor_count, p.major, p.minor);
  });

  // Streams: (device, id) pairs; torch.Stream carries the same.
  m.def("_stream_priority", [](int64_t d, int64_t id) { return streamPriority(stream_of(d, id)); });
  m.def("_stream_priority_range", [] { return driver().priorityRange(); });
  m.def("_new_stream", [](int64_t d, int64_t priority) {
    auto s = getNewStream(static_cast<c10::DeviceIndex>(d), static_cast<int>(priority));
    return py::make_tuple(static_cast<int64_t>(s.device_index()), s.id());
  });
  m.def("_stream_handle", [](int64_t d, int64_t id) {
    return reinterpret_cast<uintptr_t>(driverStream(stream_of(d, id)));
  });

  // Memory.
  m.def("_memory_stats", [](int64_t d) { return memory_stats(static_cast<c10::DeviceIndex>(d)); });
  m.def("_reset_peak_memory_stats", [](int64_t d) {
    deviceAllocator().resetPeakStats(resolve_device(static_cast<c10::DeviceIndex>(d)));
  });
  m.def("_reset_accumulated_memory_stats", [](int64_t d) {
    deviceAllocator().resetAccumulatedStats(resolve_device(static_cast<c10::DeviceIndex>(d)));
  });
  m.def("_empty_cache", [] { deviceAllocator().emptyCache(); });
  m.def("_mem_get_info", [](int64_t d) {
    return driver().memInfo(resolve_device(static_cast<c10::DeviceIndex>(d)));
  });
  m.def("_is_pinned_ptr", [](uintptr_t p) { return isPinnedPointer(reinterpret_cast<void*>(p)); });
  m.def("_host_alias", &host_alias);
  m.def(
      "_gloo_bridge",
      [](c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size) {
        return c10::intrusive_ptr<c10d::Backend>(
            c10::make_intrusive<distributed::GlooBridge>(std::move(gloo), rank, size));
      },
      py::arg("gloo"), py::arg("rank"), py::arg("size"));

  // Random.
  m.def("_default_generator", [](int64_t d) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(defaultGenerator(static_cast<c10::DeviceIndex>(d))));
  });
  m.def(
      "_generator_philox",
      [](std::optional<at::Generator> gen, int64_t d, uint64_t increment) {
        return philoxSeedOffset(gen, static_cast<c10::DeviceIndex>(d), increment);
      },
      py::arg("gen"), py::arg("device_index"), py::arg("increment"));

  // Configuration as C++ parses it (tests/runtime/test_config.py compares it
  // with torch_ext.config): variable name -> value, None where unset.
  m.def("_config", [] {
    py::dict out;
    out["TORCH_EXT_DRIVER"] = config::driver();
    out["TORCH_EXT_FALLBACK"] = config::fallback();
    out["TORCH_EXT_HOST_DEVICES"] = config::host_devices();
    auto limit = config::host_memory_limit();
    out["TORCH_EXT_HOST_MEMORY_LIMIT"] = limit ? py::cast(*limit) : py::none();
    out["TORCH_EXT_HOST_PROTECT"] = config::host_protect();
    out["TORCH_EXT_FAST_LAUNCH"] = config::fast_launch();
    return out;
  });

  // CPU fallback.
  m.def("_fallback_stats", [] { return aten::fallbackStats(); });
  m.def("_reset_fallback_stats", [] { aten::resetFallbackStats(); });
  m.def("_get_fallback_mode",
        [] { return std::string(aten::fallbackModeName(aten::fallbackMode())); });
  m.def("_set_fallback_mode",
        [](const std::string& mode) { aten::setFallbackMode(aten::parseFallbackMode(mode)); });

  torch_ext::cuda::register_cuda_bindings(m);
  torch_ext::launch::plan::register_bindings(m);
}
