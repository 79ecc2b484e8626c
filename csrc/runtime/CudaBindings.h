#pragma once
// Python functions the cuda driver's Triton integration needs
// (torch_ext/backends/cuda/triton_driver.py). Module.cpp calls
// register_cuda_bindings(m) on torch_ext._C; the functions exist under every
// driver and raise when the active driver is not cuda.

#include <torch/csrc/utils/pybind.h>

namespace torch_ext::cuda {

void register_cuda_bindings(pybind11::module_& m);

}  // namespace torch_ext::cuda
