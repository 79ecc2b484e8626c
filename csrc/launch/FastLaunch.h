#pragma once
// Tier-2 launch (cuda driver): the TensorIterator bridge's Python path runs
// once per call signature; the Triton launches it makes are recorded (which
// compiled CUfunction, grid, block, shared memory, and where each kernel
// parameter came from: an operand's pointer or a constant), and later calls
// with the same signature replay them with cuLaunchKernel, with no GIL and no
// Triton Python runtime.
//
// The signature (cache key) holds everything the Python path can depend on:
// the kernel name and extra arguments' values, each operand's dtype, shape,
// strides, 16-byte alignment and aliasing, CPU-scalar values, the common
// dtype and the device. So misaligned or differently typed inputs get their
// own recording, which Triton compiles as its own specialisation.
//
// A recording is kept only when every pointer parameter is an operand's
// pointer (no temporaries), no other driver work (copies, memsets) happened,
// and the parameter layout matches the compiled function's
// (cuFuncGetParamInfo). Otherwise that signature stays on the Python path.
// TORCH_EXT_FAST_LAUNCH=0 turns tier 2 off.

#include "launch/Launcher.h"

#include <torch/csrc/utils/pybind.h>

#include <functional>
#include <vector>

namespace torch_ext::launch::fast {

// Runs one TensorIterator-bridge call: replays a recording for this call's
// signature, or runs `slow` (the Python path) while recording it.
void pointwise(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
               const std::function<void()>& slow);

// Called by the cuda driver for copies and memsets: work that a recording
// cannot replay.
void note_driver_work() noexcept;

// _fast_launch_observe / _fast_launch_recording / _fast_launch_stats /
// _fast_launch_clear on torch_ext._C (called from register_cuda_bindings).
void register_bindings(pybind11::module_& m);

}  // namespace torch_ext::launch::fast
