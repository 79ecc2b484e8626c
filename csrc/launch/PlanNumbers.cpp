// Per-call numbers of launch plans (launch/PlanKey.h): which arguments of an op
// hold them, where a recording's launches took them, and their values at replay; and
// the table of what ops declare (numbers, size-generic plans, size arguments).

#include "launch/PlanImpl.h"
#include "launch/PlanKey.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace torch_ext::launch::plan {
namespace {

// What ops declare about their arguments (ops/_declare.py @kernel): per-call numbers,
// size-generic plans (PlanShapes.cpp) and size-like integer arguments, by op name.
struct Declared {
  uint32_t numbers = 0;             // arguments whose floats are per-call numbers
  uint32_t size_args = 0;           // integer arguments that are shape-class variables
  bool shapes[2] = {false, false};  // size-generic on call(), on the iterator path
};

std::mutex declared_mutex;
std::unordered_map<std::string, Declared> declared_by_name;
std::atomic<uint32_t> declared_generation{0};

template <typename F>
void update(const std::string& name, F&& change) {
  std::lock_guard<std::mutex> lock(declared_mutex);
  change(declared_by_name[name]);
  declared_generation++;
}

Declared declared(const char* name) {
  const uint32_t generation = declared_generation.load(std::memory_order_relaxed);
  if (generation == 0) return Declared{};
  // Call sites pass string literals: a per-thread cache by address.
  thread_local std::unordered_map<const char*, Declared> seen;
  thread_local uint32_t seen_generation = 0;
  if (seen_generation != generation) {
    seen.clear();
    seen_generation = generation;
  }
  auto it = seen.find(name);
  if (it != seen.end()) return it->second;
  Declared d;
  {
    std::lock_guard<std::mutex> lock(declared_mutex);
    auto found = declared_by_name.find(name);
    if (found != declared_by_name.end()) d = found->second;
  }
  seen.emplace(name, d);
  return d;
}

}  // namespace

void set_call_numbers(const std::string& name, uint32_t mask) {
  update(name, [&](Declared& d) { d.numbers = mask; });
}

uint32_t call_numbers(const char* name) { return declared(name).numbers; }

namespace detail {

void set_shapes(const std::string& name, bool iterator) {
  update(name, [&](Declared& d) { d.shapes[iterator] = true; });
}

bool shapes_declared(const char* name, bool iterator) { return declared(name).shapes[iterator]; }

void set_size_args(const std::string& name, uint32_t mask) {
  update(name, [&](Declared& d) { d.size_args = mask; });
}

uint32_t size_args(const char* name) { return declared(name).size_args; }

}  // namespace detail

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
