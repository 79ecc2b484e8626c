#pragma once
// The `cuda` driver (CudaDriver.cpp): the Driver interface over libcuda.so.1.

#include "runtime/Driver.h"

#include <memory>

namespace torch_ext::runtime {

// nullptr when libcuda.so.1 cannot be loaded or no GPU is visible.
std::unique_ptr<Driver> make_cuda_driver();

// Makes `device`'s primary context current on the calling thread when
// `driver` is the cuda driver (Triton loads and launches in that context);
// does nothing for other drivers.
void make_current(Driver& driver, int device);

}  // namespace torch_ext::runtime
