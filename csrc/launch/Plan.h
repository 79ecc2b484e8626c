#pragma once
// Launch plans: an op's device work replayed from C++.
//
// Every op that reaches Python (launch::call, launch::pointwise) goes through
// here. The first call with a given key runs the op's Python and records what
// it did to the device: each Triton launch (on the cuda driver the compiled
// function, grid and raw parameters, seen by the Triton launcher; on the host
// driver the kernel object and its arguments, seen by ops/_launch.py), each
// device-to-device copy and memset, and each allocation made by the caching
// allocator. Every pointer a launch received is resolved to an operand of
// the call or to one of those allocations (a "temporary"), plus a byte
// offset. The result (tensors, numbers, tuples) is resolved the same way.
//
// Later calls with the same key replay the plan: temporaries come from the
// caching allocator, the launches run with the call's pointers (cuLaunchKernel
// with no GIL on the cuda driver; the recorded kernel objects through the
// interpreter on the host driver, so CI tests the same plans the GPU runs),
// and the result is rebuilt from the operands and temporaries.
//
// The key holds everything the Python can depend on: the op's name, each
// tensor's dtype, device, sizes, strides, 16-byte alignment and aliasing,
// the values of CPU scalars, numbers, lists and strings, and the global flags
// kernels read (fp32 matmul precision, cuDNN TF32, deterministic mode) --
// except an op's declared per-call numbers (launch/PlanKey.h: e.g. the step
// sizes of _foreach_addcdiv_.ScalarList), which the launches took marked and
// each replay reads from its own call.
//
// A call stays on Python (its key remembered as such) when it did something a
// plan cannot repeat: a host<->device copy (a value read on the host), a
// random-number generator read, a bounds-check slot, a pointer that is
// neither an operand nor a temporary, a launch C++ cannot replay. A first call
// that ran Triton's autotuner is not kept (its benchmark launches are not the
// op's); the next call records again. TORCH_EXT_FAST_LAUNCH=0 turns plans off.

#include "launch/Launcher.h"

#include <c10/core/Device.h>

#include <functional>

namespace pybind11 {
class module_;
}

namespace torch_ext::launch::plan {

// launch::call_boxed: replays this call's plan or runs `slow` while recording.
c10::IValue call(const char* name, const std::vector<Arg>& args,
                 const std::function<c10::IValue()>& slow);

// launch::pointwise (the TensorIterator bridge), likewise.
void pointwise(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
               const std::function<void()>& slow);

// Hooks from the runtime; each costs a thread-local load when nothing records.
void note_alloc(void* ptr, size_t bytes) noexcept;
void note_free(void* ptr) noexcept;
// A driver copy: device-to-device ones become plan steps, others (a value
// read or written by the host) keep the call on Python.
void note_copy(void* dst, const void* src, size_t bytes, bool device_to_device) noexcept;
void note_memset(void* dst, int value, size_t bytes) noexcept;
// A Philox draw of `increment` counter values (runtime/Generator.cpp): the
// plan repeats the draw at replay, and the launches that took its seed and
// offset (marked by ops/_launch.py) get the new values. Returns the draw's
// ordinal in the recording, or -1.
int note_philox(bool default_generator, c10::DeviceIndex device, uint64_t increment) noexcept;
// Work a plan cannot repeat (`why` names it in the statistics).
void note_unreplayable(const char* why) noexcept;
// Whether this thread is recording a call now.
bool recording() noexcept;
// The iterator path's view of operand `k` of the TensorIterator call in progress (its
// sizes and strides are that operand's variables while a size-generic plan records it).
void note_operand_view(int k, const at::Tensor& view) noexcept;
// The call whose Python runs on this thread now (its TensorIterator, or its argument
// vector): an op nested in a recording has its own, and its views, scalars and result
// are not the recording's.
class CallScope {
 public:
  explicit CallScope(const void* call) noexcept;
  ~CallScope();

 private:
  const void* saved_;
};

// _plan_* functions on torch_ext._C.
void register_bindings(pybind11::module_& m);

}  // namespace torch_ext::launch::plan
