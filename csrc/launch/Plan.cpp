#include "launch/Plan.h"

#include "launch/PlanImpl.h"
#include "launch/PlanKey.h"
#include "runtime/Config.h"
#include "runtime/CudaApi.h"
#include "runtime/CudaDriver.h"
#include "runtime/Driver.h"
#include "runtime/Generator.h"
#include "runtime/Stream.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/FunctionRef.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace py = pybind11;

namespace torch_ext::launch {
[[noreturn]] void rethrow_python(const char* name, py::error_already_set& e);  // Launcher.cpp
}
namespace torch_ext::launch::plan {
namespace detail {

std::mutex persistent_mutex;
std::vector<at::Tensor>& persistent() {
  static auto* regions = new std::vector<at::Tensor>();
  return *regions;
}
thread_local Recording* active = nullptr;
thread_local const void* current_call = nullptr;

void fail(Recording& r, const char* why) noexcept {
  try {
    if (r.ok) r.why = why;
  } catch (...) {
  }
  r.ok = false;
}
Stats stats;
std::mutex cache_mutex;
// nullptr: calls with this key stay on Python.
std::unordered_map<std::string, std::shared_ptr<const Plan>> cache;
std::map<std::string, int64_t> reasons;  // why keys stayed on Python (under cache_mutex)
size_t max_entries = kMaxEntries;

void evict() {
  clear_generic();  // shape classes are learnt again from the plans that stay
  const size_t before = cache.size();
  for (auto it = cache.begin(); it != cache.end();) {
    if (!it->second || !it->second->used.load(std::memory_order_relaxed)) {
      it = cache.erase(it);
    } else {
      it->second->used.store(false, std::memory_order_relaxed);
      ++it;
    }
  }
  if (cache.size() > before - before / 4) cache.clear();  // (nearly) all in use
}

bool enabled() {
  static const bool on = config::fast_launch();  // TORCH_EXT_FAST_LAUNCH
  return on;
}

bool is_cuda() {
  static const bool cuda = std::strcmp(runtime::driver().name(), "cuda") == 0;
  return cuda;
}

bool resolve(const Recording& r, const void* p, Ref& out) {
  const char* c = static_cast<const char*>(p);
  const auto& ops = *r.operands;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].data == c && ops[k].data != nullptr) {
      out = Ref{Ref::Base::Operand, static_cast<int16_t>(k), 0};
      return true;
    }
  }
  for (size_t j = r.temps.size(); j-- > 0;) {
    const Temp& t = r.temps[j];
    if (t.live && c >= t.ptr && c < t.ptr + t.bytes) {
      out = Ref{Ref::Base::Temp, static_cast<int16_t>(j), c - t.ptr};
      return true;
    }
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].data == nullptr || !ops[k].storage) continue;
    const char* base = static_cast<const char*>(ops[k].storage.data());
    if (base && c >= base && c < base + ops[k].storage.nbytes()) {
      out = Ref{Ref::Base::Operand, static_cast<int16_t>(k), c - ops[k].data};
      return true;
    }
  }
  std::lock_guard<std::mutex> lock(persistent_mutex);
  const auto& regions = persistent();
  for (size_t k = 0; k < regions.size(); ++k) {
    const char* base = static_cast<const char*>(regions[k].const_data_ptr());
    if (c >= base && c < base + regions[k].nbytes()) {
      out = Ref{Ref::Base::Persistent, static_cast<int16_t>(k), c - base};
      return true;
    }
  }
  return false;
}

at::Tensor persistent_region(int16_t index) {
  std::lock_guard<std::mutex> lock(persistent_mutex);
  return persistent()[index];
}

bool make_view(const Recording& r, const at::Tensor& t, View& v) {
  if (!t.defined() || t.device().type() != c10::DeviceType::PrivateUse1) return false;
  v.device = t.device().index();
  if (t.numel() == 0) {
    v.ref = Ref{};
  } else if (!resolve(r, t.data_ptr(), v.ref)) {
    return false;
  }
  v.dtype = t.scalar_type();
  v.sizes = t.sizes().vec();
  v.strides = t.strides().vec();
  return true;
}

bool make_result(const Recording& r, const c10::IValue& v, Result& out) {
  if (v.isTuple()) {
    out.kind = Result::Kind::Tuple;
    for (const auto& e : v.toTupleRef().elements()) {
      out.elems.emplace_back();
      if (!make_result(r, e, out.elems.back())) return false;
    }
    return true;
  }
  if (!v.isTensor()) {
    if (!(v.isNone() || v.isInt() || v.isDouble() || v.isBool())) return false;
    out.kind = Result::Kind::Constant;
    out.constant = v;
    return true;
  }
  const at::Tensor& t = v.toTensor();
  const auto& ops = *r.operands;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].impl == t.unsafeGetTensorImpl()) {
      out.kind = Result::Kind::Operand;
      out.operand = static_cast<int16_t>(k);
      return true;
    }
  }
  out.kind = Result::Kind::View;
  if (!make_view(r, t, out.view)) return false;
  if (r.symbolic()) {  // a tensor ops/_symbolic.py made: its sizes and strides traced
    auto it = r.sym_tensors.find(t.unsafeGetTensorImpl());
    if (it != r.sym_tensors.end()) {
      out.view.size_syms = it->second.first;
      out.view.stride_syms = it->second.second;
    }
  }
  if (out.view.ref.index < 0) return true;
  // A new tensor must own exactly a temporary (or view an operand's storage).
  const char* base = static_cast<const char*>(t.storage().data());
  if (out.view.ref.base == Ref::Base::Persistent) return false;
  if (out.view.ref.temp()) {
    const Temp& tmp = r.temps[out.view.ref.index];
    if (base != tmp.ptr || t.storage().nbytes() != tmp.bytes) return false;
  } else if (base != ops[out.view.ref.index].storage.data()) {
    return false;
  }
  const auto item = static_cast<int64_t>(t.element_size());
  const char* at_ = static_cast<const char*>(t.data_ptr());
  return (at_ - base) % item == 0;
}

// Completes a cuda launch's parameters against the compiled function: Triton
// appends scratch pointers (none, one or two, by version), null when unused; the
// first is the global scratch of a launch that needs some (Step::scratch).
bool check_layout(Step& l) {
  const auto& a = *cuda::api();
  if (!a.cuFuncGetParamInfo) return false;
  const size_t user = l.params.size();
  size_t count = 0, offset = 0, size = 0;
  auto fn = static_cast<cuda::CUfunction>(l.function);
  while (count <= kMaxParams &&
         a.cuFuncGetParamInfo(fn, count, &offset, &size) == cuda::CUDA_SUCCESS) {
    if (count < l.params.size() && size != l.params[count].size) return false;
    if (count >= l.params.size() && size != 8) return false;
    ++count;
  }
  if (count < l.params.size() || count > l.params.size() + 2 || count > kMaxParams) return false;
  if (l.scratch) {
    if (count == user) return false;  // no parameter to pass it in
    l.scratch_param = static_cast<int16_t>(user);
  }
  while (l.params.size() < count) l.params.push_back(Param{});
  return true;
}

std::atomic<uint64_t> serials{0};

// How a call finds its shape class (PlanShapes.cpp): whether its op is declared
// size-generic, its class key, and its variables (sizes and strides).
struct ShapeInfo {  // non-owning: built on every call, used on a miss
  c10::function_ref<bool()> declared;
  c10::function_ref<bool(std::string&)> class_key;
  c10::function_ref<std::vector<int64_t>()> vars;
  const void* call = nullptr;  // the call's TensorIterator or argument vector (CallScope)
};

c10::IValue run(const char* name, std::string& key, const std::vector<Operand>& ops,
                c10::DeviceIndex device, const std::function<c10::IValue()>& slow,
                const std::vector<Arg>* args, const ShapeInfo& shapes) {
  std::shared_ptr<const Plan> plan;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      known = true;
      plan = it->second;
    }
  }
  // Nested inside a recording, an op runs its Python even where it has a plan: a
  // replay's cuda launches bypass Triton's launcher, so the recording would miss them.
  if (plan && !active) {
    if (!plan->used.load(std::memory_order_relaxed))
      plan->used.store(true, std::memory_order_relaxed);
    stats.replayed++;
    stats.launched += plan->launches;
    return replay(*plan, ops, device, args);
  }
  if (known || active) {  // stays on Python, or nested inside a recording
    stats.slow++;
    return slow();
  }
  std::string ckey;
  std::vector<int64_t> vars;
  const bool generic = shapes.declared() && shapes.class_key(ckey);
  if (generic) vars = shapes.vars();
  if (generic) {  // a plan recorded at other sizes of this shape class
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      plan = find_generic(ckey, vars);
      if (plan) {
        if (cache.size() >= max_entries) evict();
        cache.emplace(std::move(key), plan);
      }
    }
    if (plan) {
      stats.replayed++;
      stats.generalized++;
      stats.launched += plan->launches;
      return replay(*plan, ops, device, args);
    }
  }
  Recording rec;
  rec.operands = &ops;
  rec.args = args;
  rec.number_args = args ? call_numbers(name) : 0;
  if (generic) {
    rec.serial = ++serials;
    rec.vars = &vars;
    rec.call = shapes.call;
  }
  active = &rec;
  c10::IValue result;
  try {
    result = slow();
  } catch (...) {
    active = nullptr;
    throw;
  }
  active = nullptr;
  if (rec.retry) {
    stats.retried++;
    return result;
  }
  auto made = std::make_shared<Plan>();
  if (rec.ok && !make_result(rec, result, made->result)) fail(rec, "result");
  for (const auto& o : ops) {  // the op must not have moved its operands' memory
    if (o.tensor.defined() && o.tensor.has_storage() &&
        static_cast<const char*>(o.tensor.data_ptr()) != o.data) {
      fail(rec, "operand moved");
    }
  }
  if (rec.ok && rec.steps.size() > kMaxSteps) fail(rec, "too many steps");
  for (const auto& [seed, offset] : rec.philox) {
    if (!(seed && offset)) fail(rec, "random");  // a draw no launch took as marked
  }
  if (rec.ok && !all_numbers_marked(rec)) fail(rec, "per-call number not marked");
  for (auto& s : rec.steps) {
    if (rec.ok && s.kind == Step::Kind::Cuda && !check_layout(s)) fail(rec, "parameter layout");
    if (s.kind == Step::Kind::Cuda || s.kind == Step::Kind::Host) made->launches++;
  }
  if (rec.ok) {
    for (const Temp& t : rec.temps) made->temps.push_back(t.bytes);
    made->numbers = rec.numbers;
    made->steps = std::move(rec.steps);
    if (rec.symbolic() && !finish_symbolic(rec, *made)) fail(rec, "symbolic sizes");
  }
  (rec.ok ? stats.recorded : stats.uncacheable)++;
  std::shared_ptr<const Plan> kept =
      rec.ok ? std::shared_ptr<const Plan>(std::move(made)) : nullptr;
  // A size-generic recording verifies its region's plan: compared outside the lock (the
  // comparison may run Python, and Python may call ops).
  std::shared_ptr<const Plan> region;
  bool same = false;
  if (kept && kept->symbolic) {
    {
      std::lock_guard<std::mutex> lock(cache_mutex);
      region = region_plan(ckey, vars);
    }
    if (region) same = same_plan(*region, *kept);
  }
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (!rec.ok) reasons[std::string(name) + ": " + rec.why]++;
  if (cache.size() >= max_entries) evict();
  if (kept && kept->symbolic) learn_generic(name, ckey, vars, kept, region.get(), same);
  cache.emplace(std::move(key), std::move(kept));
  return result;
}

// A call whose arguments make no key (e.g. a CPU tensor of several elements).
void note_unkeyed(const char* name) {
  stats.slow++;
  std::lock_guard<std::mutex> lock(cache_mutex);
  reasons[std::string(name) + ": arguments make no key"]++;
}

}  // namespace detail

using namespace detail;

bool recording() noexcept { return active != nullptr && active->paused == 0; }

CallScope::CallScope(const void* call) noexcept : saved_(current_call) { current_call = call; }
CallScope::~CallScope() { current_call = saved_; }

void note_operand_view(int k, const at::Tensor& view) noexcept {
  Recording* r = active;
  if (!r || r->paused || !r->symbolic() || !r->call || r->call != current_call) {
    return;
  }
  try {
    r->operand_views[view.unsafeGetTensorImpl()] = k;
  } catch (...) {
    r->ok = false;
  }
}

c10::IValue call(const char* name, const std::vector<Arg>& args,
                 const std::function<c10::IValue()>& slow) {
  if (!enabled()) return slow();
  std::string key;
  std::vector<Operand> ops;
  c10::DeviceIndex device = -1;
  if (!call_key(name, args, key, ops, device)) {
    note_unkeyed(name);
    return slow();
  }
  if (device < 0) device = runtime::getCurrentStream().device_index();
  // named: ShapeInfo only refers to them
  auto declared = [&] { return shapes_declared(name, /*iterator=*/false); };
  auto class_key = [&](std::string& ckey) {
    std::vector<Operand> unused;
    c10::DeviceIndex d = -1;
    return call_key(name, args, ckey, unused, d, /*sizes=*/false, size_args(name));
  };
  auto vars = [&] { return call_vars(ops, args, size_args(name)); };
  const ShapeInfo shapes{declared, class_key, vars, &args};
  return run(name, key, ops, device, slow, &args, shapes);
}

void pointwise(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
               const std::function<void()>& slow) {
  auto as_call = [&]() -> c10::IValue {
    slow();
    return c10::IValue();
  };
  if (!enabled() || iter.numel() == 0) return slow();
  std::string key;
  std::vector<Operand> ops;
  if (!iterator_key(iter, name, extra, key, ops)) {
    note_unkeyed(name);
    return slow();
  }
  auto declared = [&] { return shapes_declared(name, /*iterator=*/true); };
  auto class_key = [&](std::string& ckey) {
    std::vector<Operand> unused;
    return iterator_key(iter, name, extra, ckey, unused, /*sizes=*/false);
  };
  auto vars = [&] { return iterator_vars(iter); };
  const ShapeInfo shapes{declared, class_key, vars, &iter};
  run(name, key, ops, iter.device(0).index(), as_call, nullptr, shapes);
}

void note_alloc(void* ptr, size_t bytes) noexcept {
  Recording* r = active;
  if (!r || r->paused || !ptr) return;
  try {
    r->temps.push_back(Temp{static_cast<char*>(ptr), bytes, true});
  } catch (...) {
    r->ok = false;
  }
}

void note_free(void* ptr) noexcept {
  Recording* r = active;
  if (!r || r->paused || !ptr) return;
  for (size_t j = r->temps.size(); j-- > 0;) {
    if (r->temps[j].live && r->temps[j].ptr == ptr) {
      r->temps[j].live = false;
      return;
    }
  }
}

void note_copy(void* dst, const void* src, size_t bytes, bool device_to_device) noexcept {
  Recording* r = active;
  if (!r || r->paused || !r->ok) return;
  if (!device_to_device) return fail(*r, "host copy");
  Step s;
  s.kind = Step::Kind::Copy;
  s.bytes = bytes;
  if (!resolve(*r, dst, s.dst) || !resolve(*r, src, s.src)) return fail(*r, "foreign pointer");
  try {
    r->steps.push_back(std::move(s));
  } catch (...) {
    r->ok = false;
  }
}

void note_memset(void* dst, int value, size_t bytes) noexcept {
  Recording* r = active;
  if (!r || r->paused || !r->ok) return;
  Step s;
  s.kind = Step::Kind::Memset;
  s.bytes = bytes;
  s.value = value;
  if (!resolve(*r, dst, s.dst)) return fail(*r, "foreign pointer");
  try {
    r->steps.push_back(std::move(s));
  } catch (...) {
    r->ok = false;
  }
}

int note_philox(bool default_generator, c10::DeviceIndex device, uint64_t increment) noexcept {
  Recording* r = active;
  if (!r || r->paused || !r->ok) return -1;
  if (!default_generator) {  // a generator argument is not part of the key
    fail(*r, "random generator argument");
    return -1;
  }
  try {
    Step s;
    s.kind = Step::Kind::Philox;
    s.device = device;
    s.bytes = increment;
    r->steps.push_back(std::move(s));
    r->philox.emplace_back(false, false);
  } catch (...) {
    r->ok = false;
    return -1;
  }
  return static_cast<int>(r->philox.size()) - 1;
}

void note_unreplayable(const char* why) noexcept {
  Recording* r = active;
  if (r && !r->paused) fail(*r, why);
}

}  // namespace torch_ext::launch::plan
