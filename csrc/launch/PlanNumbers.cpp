// Per-call numbers of launch plans (launch/PlanKey.h): which arguments of an op
// hold them, where a recording's launches took them, and their values at replay.

#include "launch/PlanImpl.h"
#include "launch/PlanKey.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace torch_ext::launch::plan {
namespace {

std::mutex numbers_mutex;
std::unordered_map<std::string, uint32_t> numbers_by_name;
std::atomic<uint32_t> numbers_generation{0};

}  // namespace

void set_call_numbers(const std::string& name, uint32_t mask) {
  std::lock_guard<std::mutex> lock(numbers_mutex);
  numbers_by_name[name] = mask;
  numbers_generation++;
}

uint32_t call_numbers(const char* name) {
  const uint32_t generation = numbers_generation.load(std::memory_order_relaxed);
  if (generation == 0) return 0;
  // Call sites pass string literals: a per-thread cache by address.
  thread_local std::unordered_map<const char*, uint32_t> seen;
  thread_local uint32_t seen_generation = 0;
  if (seen_generation != generation) {
    seen.clear();
    seen_generation = generation;
  }
  auto it = seen.find(name);
  if (it != seen.end()) return it->second;
  uint32_t mask = 0;
  {
    std::lock_guard<std::mutex> lock(numbers_mutex);
    auto found = numbers_by_name.find(name);
    if (found != numbers_by_name.end()) mask = found->second;
  }
  seen.emplace(name, mask);
  return mask;
}

namespace detail {

bool number_value(const std::vector<Arg>& args, const Number& n, double& out) {
  if (n.arg < 0 || static_cast<size_t>(n.arg) >= args.size()) return false;
  const c10::IValue& v = args[n.arg].value;
  if (n.elem < 0) {
    if (!v.isDouble()) return false;
    out = v.toDouble();
    return true;
  }
  if (v.isDoubleList()) {
    const auto list = v.toDoubleList();
    if (static_cast<size_t>(n.elem) >= list.size()) return false;
    out = list.get(n.elem);
    return true;
  }
  const c10::IValue* e = nullptr;
  if (v.isList()) {  // e.g. List[Scalar]
    const auto list = v.toListRef();
    if (static_cast<size_t>(n.elem) < list.size()) e = &list[n.elem];
  } else if (v.isTuple()) {  // Scalar[] (Launcher.h to_arg)
    const auto& elems = v.toTupleRef().elements();
    if (static_cast<size_t>(n.elem) < elems.size()) e = &elems[n.elem];
  }
  if (!e || !e->isDouble()) return false;
  out = e->toDouble();
  return true;
}

int note_number(Recording& r, int arg, int elem) {
  double unused = 0;
  const Number n{static_cast<int16_t>(arg), elem};
  if (!r.args || arg < 0 || arg >= 32 || !((r.number_args >> arg) & 1u) ||
      !number_value(*r.args, n, unused)) {
    return -1;
  }
  for (size_t k = 0; k < r.numbers.size(); ++k) {
    if (r.numbers[k] == n) return static_cast<int>(k);
  }
  r.numbers.push_back(n);
  return static_cast<int>(r.numbers.size()) - 1;
}

// Every float of the per-call arguments reached a launch marked: a value the Python
// used otherwise (computed with, branched on) would be stale at replay.
bool all_numbers_marked(const Recording& r) {
  if (!r.number_args || !r.args) return true;
  for (size_t i = 0; i < r.args->size() && i < 32; ++i) {
    if (!((r.number_args >> i) & 1u)) continue;
    const c10::IValue& v = (*r.args)[i].value;
    int32_t count = -1;
    if (v.isDoubleList()) {
      count = static_cast<int32_t>(v.toDoubleList().size());
    } else if (v.isList()) {
      count = static_cast<int32_t>(v.toListRef().size());
    } else if (v.isTuple()) {
      count = static_cast<int32_t>(v.toTupleRef().elements().size());
    }
    for (int32_t e = count < 0 ? -1 : 0; e < std::max(count, 0); ++e) {
      double unused = 0;
      const Number n{static_cast<int16_t>(i), e};
      if (!number_value(*r.args, n, unused)) continue;  // not a float: in the key
      if (std::find(r.numbers.begin(), r.numbers.end(), n) == r.numbers.end()) return false;
    }
  }
  return true;
}

}  // namespace detail
}  // namespace torch_ext::launch::plan
