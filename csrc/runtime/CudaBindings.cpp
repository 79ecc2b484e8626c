#include "runtime/CudaBindings.h"

#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Stream.h"

#include <c10/util/Exception.h>

#include <cstring>

namespace torch_ext::cuda {
namespace {

using namespace torch_ext::runtime;

Driver& cuda_driver() {
  Driver& d = driver();
  TORCH_CHECK(std::strcmp(d.name(), "cuda") == 0,
              "torch_ext: this needs the cuda driver, the active one is '", d.name(), "'");
  return d;
}

}  // namespace

void register_cuda_bindings(pybind11::module_& m) {
  // Called by Triton before every launch: the raw CUstream of the current
  // privateuseone stream, with that device's primary context made current.
  m.def("_cuda_current_raw_stream", [](int64_t device) {
    Driver& d = cuda_driver();
    auto index = resolve_device(static_cast<c10::DeviceIndex>(device));
    make_current(d, index);
    return reinterpret_cast<uintptr_t>(driverStream(getCurrentStream(index)));
  });
  m.def("_cuda_current_device", []() { return static_cast<int64_t>(current_device()); });
  m.def("_cuda_set_device", [](int64_t device) {
    Driver& d = cuda_driver();
    set_device(static_cast<c10::DeviceIndex>(device));
    make_current(d, static_cast<int>(device));
  });
  m.def("_cuda_device_capability", [](int64_t device) {
    auto props = cuda_driver().properties(resolve_device(static_cast<c10::DeviceIndex>(device)));
    return std::make_pair(props.major, props.minor);
  });
}

}  // namespace torch_ext::cuda
