#pragma once
// The key of a launch plan (launch/Plan.h) and the operands its pointers are
// resolved against.

#include "launch/Launcher.h"

#include <string>
#include <vector>

namespace torch_ext::launch::plan {

// A device tensor of the call: its data pointer and storage (for views at
// replay), and for call() operands the tensor itself (a result that *is* an
// operand is returned as that tensor).
struct Operand {
  char* data = nullptr;
  c10::Storage storage;
  c10::TensorImpl* impl = nullptr;
  at::Tensor tensor;
};

// Per-call numbers: the arguments (a bit per index) of op `name` whose floating-point
// values are not part of its key. The op's Python passes them to kernels marked
// (ops/_launch.py CallNumber) and a replay reads them from the call; declared by
// `@kernel(..., numbers=(index, ...))`.
void set_call_numbers(const std::string& name, uint32_t mask);
uint32_t call_numbers(const char* name);

// false: this call cannot be keyed (it stays on Python). sizes=false: the key of the
// call's shape class (PlanShapes.cpp): tensors' ranks instead of sizes and strides, and
// the integer arguments of `size_mask` (a bit per index) left out.
bool call_key(const char* name, const std::vector<Arg>& args, std::string& key,
              std::vector<Operand>& ops, c10::DeviceIndex& device, bool sizes = true,
              uint32_t size_mask = 0);
bool iterator_key(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
                  std::string& key, std::vector<Operand>& ops, bool sizes = true);

// A CPU scalar of this dtype on the iterator path is a shape-class variable (integers:
// `arange(n) + past_length` replays for every length), not part of the class key.
inline bool scalar_is_variable(at::ScalarType t) {
  return at::isIntegralType(t, /*includeBool=*/false);
}

}  // namespace torch_ext::launch::plan
