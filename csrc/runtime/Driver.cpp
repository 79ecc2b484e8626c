// Driver selection: TORCH_EXT_DRIVER=auto|host|cuda, decided once at first use.
#include "runtime/Driver.h"
#include "runtime/Config.h"

#include <c10/util/Exception.h>

#include <string>

namespace torch_ext::runtime {

static std::unique_ptr<Driver> choose_driver() {
  const std::string want = config::driver();  // auto, host or cuda
  if (want == "host") return make_host_driver();
  if (want == "cuda") {
    auto cuda = make_cuda_driver();
    TORCH_CHECK(cuda, "TORCH_EXT_DRIVER=cuda but no usable NVIDIA GPU (libcuda.so.1) was found");
    return cuda;
  }
  if (auto cuda = make_cuda_driver()) return cuda;
  return make_host_driver();
}

Driver& driver() {
  // Never destroyed: allocations may be freed during interpreter shutdown.
  static Driver* const instance = choose_driver().release();
  return *instance;
}

}  // namespace torch_ext::runtime
