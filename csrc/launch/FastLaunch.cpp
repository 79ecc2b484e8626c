#include "launch/FastLaunch.h"

#include "runtime/Config.h"
#include "runtime/CudaApi.h"
#include "runtime/CudaDriver.h"
#include "runtime/Stream.h"

#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace py = pybind11;

namespace torch_ext::launch::fast {
namespace {

using namespace torch_ext::cuda;

constexpr size_t kMaxParams = 64;
constexpr size_t kMaxLaunches = 8;
constexpr size_t kMaxEntries = 4096;

// One kernel parameter: an operand's data pointer (operand >= 0) or the
// constant `bits` (little-endian, `size` bytes used).
struct Param {
  uint8_t size;
  int16_t operand;
  uint64_t bits;
};

struct Launch {
  CUfunction function;
  unsigned grid[3];
  unsigned threads;
  unsigned shared;
  std::vector<Param> params;
};

struct Recipe {
  std::vector<Launch> launches;
};

struct Recording {
  at::TensorIteratorBase* iter;
  std::vector<Launch> launches;
  bool ok = true;
};

thread_local Recording* active_recording = nullptr;

struct Stats {
  // launched: kernels launched by replays (cuLaunchKernel from C++), for the
  // model benchmark's share of launches through the fast path.
  std::atomic<int64_t> replayed{0}, recorded{0}, uncacheable{0}, slow{0}, launched{0};
} stats;

std::mutex cache_mutex;
// nullptr: this signature stays on the Python path.
std::unordered_map<std::string, std::shared_ptr<const Recipe>> cache;

bool enabled() {
  static const bool on = [] {
    if (!config::fast_launch()) return false;
    const Api* a = api();
    return a && a->cuFuncGetParamInfo && std::strcmp(runtime::driver().name(), "cuda") == 0;
  }();
  return on;
}

template <typename T>
void put(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// The call's signature; false when an argument cannot be part of one.
bool make_key(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
              std::string& key) {
  key.reserve(192);
  key.append(name);
  key.push_back('\0');
  const int n = iter.ntensors();
  put(key, static_cast<int8_t>(iter.device(0).index()));
  put(key, static_cast<int8_t>(n));
  put(key, static_cast<int8_t>(iter.noutputs()));
  put(key, static_cast<int8_t>(iter.ndim()));
  for (auto s : iter.shape()) put(key, s);
  for (int i = 0; i < n; ++i) {
    put(key, static_cast<int8_t>(iter.dtype(i)));
    const auto* ptr = static_cast<const char*>(iter.data_ptr(i));
    if (iter.is_cpu_scalar(i)) {
      put(key, 's');
      uint64_t bits = 0;
      std::memcpy(&bits, ptr, std::min<size_t>(sizeof(bits), c10::elementSize(iter.dtype(i))));
      put(key, bits);
      continue;
    }
    put(key, static_cast<char>(reinterpret_cast<uintptr_t>(ptr) % 16 == 0 ? 'a' : 'u'));
    int8_t alias = -1;
    for (int j = 0; j < i; ++j) {
      if (iter.data_ptr(j) == ptr) {
        alias = static_cast<int8_t>(j);
        break;
      }
    }
    put(key, alias);
    for (auto s : iter.strides(i)) put(key, s);
  }
  for (const Arg& a : extra) {
    const c10::IValue& v = a.value;
    put(key, static_cast<int8_t>(a.kind));
    if (v.isNone()) {
      put(key, 'n');
    } else if (v.isBool()) {
      put(key, 'b');
      put(key, v.toBool());
    } else if (v.isInt()) {
      put(key, 'i');
      put(key, v.toInt());
    } else if (v.isDouble()) {
      put(key, 'd');
      put(key, v.toDouble());
    } else if (v.isString()) {
      put(key, 's');
      key.append(v.toStringRef());
      key.push_back('\0');
    } else {
      return false;
    }
  }
  return true;
}

void replay(const Recipe& recipe, at::TensorIteratorBase& iter) {
  const Api& a = *api();
  const auto device = iter.device(0).index();
  runtime::make_current(runtime::driver(), device);
  auto stream = static_cast<CUstream>(runtime::driverStream(runtime::getCurrentStream(device)));
  uint64_t values[kMaxParams];
  void* pointers[kMaxParams];
  for (const Launch& l : recipe.launches) {
    for (size_t k = 0; k < l.params.size(); ++k) {
      const Param& p = l.params[k];
      values[k] = p.operand >= 0 ? reinterpret_cast<uint64_t>(iter.data_ptr(p.operand)) : p.bits;
      pointers[k] = &values[k];
    }
    TORCH_EXT_CUDA_CHECK(a.cuLaunchKernel(l.function, l.grid[0], l.grid[1], l.grid[2], l.threads, 1,
                                          1, l.shared, stream, pointers, nullptr));
  }
}

// Completes a launch's parameter list against the compiled function:
// Triton appends scratch pointers (none, one or two, by version) after the
// kernel's own parameters; they are null when no scratch is used.
bool check_layout(Launch& l) {
  const Api& a = *api();
  size_t count = 0, offset = 0, size = 0;
  while (count <= kMaxParams &&
         a.cuFuncGetParamInfo(l.function, count, &offset, &size) == CUDA_SUCCESS) {
    if (count < l.params.size() && size != l.params[count].size) return false;
    if (count >= l.params.size() && size != 8) return false;
    ++count;
  }
  if (count < l.params.size() || count > l.params.size() + 2 || count > kMaxParams) return false;
  while (l.params.size() < count) l.params.push_back(Param{8, -1, 0});
  return true;
}

uint8_t param_size(const std::string& type) {
  if (type[0] == '*') return 8;
  if (type == "i1" || type == "i8" || type == "u1" || type == "u8") return 1;
  if (type == "i16" || type == "u16") return 2;
  if (type == "i32" || type == "u32" || type == "fp32") return 4;
  if (type == "i64" || type == "u64" || type == "fp64") return 8;
  return 0;
}

// From the Triton launcher (torch_ext/backends/cuda/triton_driver.py), with
// the GIL held, while a recording is active on this thread.
void observe(py::object grid, uint64_t function, unsigned threads, unsigned shared,
             py::object types, py::list values) {
  Recording* rec = active_recording;
  if (!rec || !rec->ok) return;
  if (types.is_none() || rec->launches.size() >= kMaxLaunches) {
    rec->ok = false;
    return;
  }
  auto type_list = types.cast<std::vector<std::string>>();
  auto g = grid.cast<std::vector<int64_t>>();
  if (type_list.size() != values.size() || type_list.size() > kMaxParams || g.size() != 3) {
    rec->ok = false;
    return;
  }
  Launch l{reinterpret_cast<CUfunction>(function),
           {static_cast<unsigned>(g[0]), static_cast<unsigned>(g[1]), static_cast<unsigned>(g[2])},
           threads,
           shared,
           {}};
  at::TensorIteratorBase& iter = *rec->iter;
  for (size_t k = 0; k < type_list.size(); ++k) {
    const std::string& type = type_list[k];
    const uint8_t size = type.empty() ? 0 : param_size(type);
    if (size == 0) {
      rec->ok = false;
      return;
    }
    py::handle v = values[k];
    Param p{size, -1, 0};
    if (type[0] == '*') {
      const auto ptr = v.cast<uint64_t>();
      if (ptr != 0) {
        for (int j = 0; j < iter.ntensors() && p.operand < 0; ++j) {
          if (!iter.is_cpu_scalar(j) && reinterpret_cast<uint64_t>(iter.data_ptr(j)) == ptr) {
            p.operand = static_cast<int16_t>(j);
          }
        }
        if (p.operand < 0) {  // a temporary: its address changes from call to call
          rec->ok = false;
          return;
        }
      }
    } else if (type == "fp32") {
      const float f = v.cast<float>();
      std::memcpy(&p.bits, &f, sizeof(f));
    } else if (type == "fp64") {
      const double d = v.cast<double>();
      std::memcpy(&p.bits, &d, sizeof(d));
    } else if (type == "u64") {  // may exceed int64 (random_'s full 64-bit range)
      const uint64_t u = v.cast<uint64_t>();
      std::memcpy(&p.bits, &u, sizeof(u));
    } else {
      const int64_t i = v.cast<int64_t>();
      std::memcpy(&p.bits, &i, sizeof(i));  // little-endian: the low `size` bytes
    }
    l.params.push_back(p);
  }
  rec->launches.push_back(std::move(l));
}

}  // namespace

void note_driver_work() noexcept {
  if (active_recording) active_recording->ok = false;
}

void pointwise(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
               const std::function<void()>& slow) {
  std::string key;
  if (!enabled() || iter.numel() == 0 || !make_key(iter, name, extra, key)) {
    slow();
    return;
  }
  std::shared_ptr<const Recipe> recipe;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key);
    if (it != cache.end()) {
      known = true;
      recipe = it->second;
    }
  }
  if (recipe) {
    replay(*recipe, iter);
    stats.replayed++;
    stats.launched += static_cast<int64_t>(recipe->launches.size());
    return;
  }
  if (known || active_recording) {  // not cacheable, or nested inside a recording
    stats.slow++;
    slow();
    return;
  }
  Recording rec{&iter, {}, true};
  active_recording = &rec;
  try {
    slow();
  } catch (...) {
    active_recording = nullptr;
    throw;
  }
  active_recording = nullptr;
  bool ok = rec.ok && !rec.launches.empty();
  for (auto& l : rec.launches) ok = ok && check_layout(l);
  auto entry = ok ? std::make_shared<const Recipe>(Recipe{std::move(rec.launches)}) : nullptr;
  (ok ? stats.recorded : stats.uncacheable)++;
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(std::move(key), std::move(entry));
}

void register_bindings(py::module_& m) {
  m.def("_fast_launch_recording", []() { return active_recording != nullptr; });
  m.def("_fast_launch_observe", &observe, py::arg("grid"), py::arg("function"), py::arg("threads"),
        py::arg("shared"), py::arg("types"), py::arg("values"));
  m.def("_fast_launch_enabled", []() { return enabled(); });
  m.def("_fast_launch_stats", []() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    py::dict d;
    d["replayed"] = stats.replayed.load();
    d["recorded"] = stats.recorded.load();
    d["uncacheable"] = stats.uncacheable.load();
    d["slow"] = stats.slow.load();
    d["launched"] = stats.launched.load();
    d["entries"] = cache.size();
    return d;
  });
  m.def("_fast_launch_clear", []() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    cache.clear();
  });
}

}  // namespace torch_ext::launch::fast
