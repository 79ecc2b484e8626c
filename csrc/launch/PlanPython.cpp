// What Python calls of the launch plans (launch/Plan.h): the observers through
// which a recording sees launches (the cuda driver's Triton launcher, ops/_launch.py on
// the host driver, callbacks), and the _plan_* functions of torch_ext._C.

#include "launch/Plan.h"
#include "launch/PlanImpl.h"

#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace torch_ext::launch::plan {
namespace {

using namespace detail;

// ---- observers (Python side, GIL held) ----

uint8_t param_size(const std::string& type) {
  if (type[0] == '*') return 8;
  if (type == "i1" || type == "i8" || type == "u1" || type == "u8") return 1;
  if (type == "i16" || type == "u16" || type == "fp16" || type == "bf16") return 2;
  if (type == "i32" || type == "u32" || type == "fp32") return 4;
  if (type == "i64" || type == "u64" || type == "fp64") return 8;
  return 0;
}

// A mark's `which` for a per-call number (0 and 1: a Philox seed and offset), and for
// an integer that is an expression over the call's sizes (ops/_symbolic.py).
constexpr int kNumberMark = 2;
constexpr int kSymMark = 3;

bool valid_sym(const Recording& rec, int id) {
  return rec.symbolic() && id >= 0 && static_cast<size_t>(id) < rec.exprs.size();
}

// From the cuda driver's Triton launcher (backends/cuda/triton_driver.py).
// Marks a parameter as Philox draw `ordinal`'s seed (0) or offset (1).
bool mark_philox(Recording& rec, int8_t which, int16_t ordinal) {
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= rec.philox.size()) return false;
  (which == 0 ? rec.philox[ordinal].first : rec.philox[ordinal].second) = true;
  return true;
}

void observe_cuda(py::object grid, uint64_t function, unsigned threads, unsigned shared,
                  py::object types, py::list values, std::string name,
                  std::vector<std::tuple<int, int, int>> marks, std::vector<int> grid_syms,
                  uint32_t scratch) {
  Recording* rec = active;
  if (!rec || !rec->ok || rec->paused) return;
  if (types.is_none()) return fail(*rec, "launch not replayable");
  auto type_list = types.cast<std::vector<std::string>>();
  auto g = grid.cast<std::vector<int64_t>>();
  if (type_list.size() != values.size() || type_list.size() > kMaxParams || g.size() != 3) {
    return fail(*rec, "launch not replayable");
  }
  Step s;
  s.kind = Step::Kind::Cuda;
  s.name = "triton:" + name;
  s.function = reinterpret_cast<void*>(function);
  for (int d = 0; d < 3; ++d) s.grid[d] = static_cast<unsigned>(g[d]);
  for (size_t d = 0; d < grid_syms.size() && d < 3; ++d) {
    if (grid_syms[d] < 0) continue;
    if (!valid_sym(*rec, grid_syms[d])) return fail(*rec, "symbolic sizes");
    s.grid_syms[d] = static_cast<int16_t>(grid_syms[d]);
  }
  s.threads = threads;
  s.shared = shared;
  s.scratch = scratch;
  for (size_t k = 0; k < type_list.size(); ++k) {
    const std::string& type = type_list[k];
    const uint8_t size = type.empty() ? 0 : param_size(type);
    if (size == 0) return fail(*rec, "parameter type");
    py::handle v = values[k];
    Param p;
    p.size = size;
    if (type[0] == '*') {
      const auto ptr = v.cast<uint64_t>();
      if (ptr != 0) {
        if (!resolve(*rec, reinterpret_cast<const void*>(ptr), p.ref)) {
          return fail(*rec, "foreign pointer");
        }
        p.is_ref = true;
      }
    } else if (type == "fp32") {
      const float f = v.cast<float>();
      std::memcpy(&p.bits, &f, sizeof(f));
    } else if (type == "fp64") {
      const double d = v.cast<double>();
      std::memcpy(&p.bits, &d, sizeof(d));
    } else if (type == "fp16" || type == "bf16") {
      return fail(*rec, "parameter type");
    } else if (type == "u64") {  // may exceed int64 (random_'s full 64-bit range)
      const auto u = v.cast<uint64_t>();
      std::memcpy(&p.bits, &u, sizeof(u));
    } else {
      const auto i = v.cast<int64_t>();
      std::memcpy(&p.bits, &i, sizeof(i));  // little-endian: the low `size` bytes
    }
    s.params.push_back(p);
  }
  for (const auto& [index, which, ordinal] : marks) {
    if (index < 0 || static_cast<size_t>(index) >= s.params.size() || s.params[index].is_ref) {
      return fail(*rec, "random");
    }
    if (which == kSymMark) {  // an integer parameter computed from sizes
      const std::string& type = type_list[index];
      if (!valid_sym(*rec, ordinal) || type[0] == '*' || type[0] == 'f') {
        return fail(*rec, "symbolic sizes");
      }
      s.params[index].sym = static_cast<int16_t>(ordinal);
      continue;
    }
    if (which == kNumberMark) {  // a per-call number: an fp32 or fp64 parameter
      const std::string& type = type_list[index];
      if (ordinal < 0 || static_cast<size_t>(ordinal) >= rec->numbers.size() ||
          (type != "fp32" && type != "fp64")) {
        return fail(*rec, "per-call number not marked");
      }
      s.params[index].number = static_cast<int16_t>(ordinal);
      continue;
    }
    if (!mark_philox(*rec, static_cast<int8_t>(which), static_cast<int16_t>(ordinal))) {
      return fail(*rec, "random");
    }
    s.params[index].philox = static_cast<int8_t>(which);
    s.params[index].ordinal = static_cast<int16_t>(ordinal);
  }
  rec->steps.push_back(std::move(s));
}

// From ops/_launch.py on the host driver: kernel[grid](*args, **kwargs) with
// the tensors taken out of args/kwargs (slots the replay fills).
void observe_host(py::object kernel, py::object grid, py::object args, py::object kwargs,
                  std::vector<at::Tensor> tensors, std::string name,
                  std::vector<std::tuple<int, int>> marks) {
  Recording* rec = active;
  if (!rec || !rec->ok || rec->paused) return;
  Step s;
  s.kind = Step::Kind::Host;
  s.name = "triton:" + name;
  s.kernel = std::make_shared<PyRef>(kernel);
  s.py_grid = std::make_shared<PyRef>(grid);
  s.args = std::make_shared<PyRef>(args);
  s.kwargs = std::make_shared<PyRef>(kwargs);
  for (const auto& t : tensors) {
    View v;
    if (!make_view(*rec, t, v)) return fail(*rec, "foreign pointer");
    // A kernel takes a pointer: in a size-generic plan the view's sizes are not kept.
    v.pointer_only = rec->symbolic() && v.ref.index >= 0;
    s.tensors.push_back(std::move(v));
  }
  for (const auto& [which, ordinal] : marks) {
    if (which == kSymMark) {
      if (!valid_sym(*rec, ordinal)) return fail(*rec, "symbolic sizes");
      continue;
    }
    if (which == kNumberMark) {
      if (ordinal < 0 || static_cast<size_t>(ordinal) >= rec->numbers.size()) {
        return fail(*rec, "per-call number not marked");
      }
      continue;
    }
    if (!mark_philox(*rec, static_cast<int8_t>(which), static_cast<int16_t>(ordinal))) {
      return fail(*rec, "random");
    }
  }
  rec->steps.push_back(std::move(s));
}

// A Python call the replay repeats after the steps recorded so far.
void observe_callback(py::object fn, py::tuple args, std::string name, double interval_s) {
  Recording* rec = active;
  if (!rec || !rec->ok) return;
  Step s;
  s.kind = Step::Kind::Callback;
  s.name = std::move(name);
  s.interval_ns = static_cast<int64_t>(interval_s * 1e9);
  s.kernel = std::make_shared<PyRef>(fn);
  s.args = std::make_shared<PyRef>(args);
  rec->steps.push_back(std::move(s));
}

// ---- shape classes (PlanShapes.cpp): what ops/_symbolic.py sends while recording ----

Recording* symbolic_recording() {
  Recording* rec = active;
  return rec && rec->paused == 0 && rec->ok && rec->symbolic() ? rec : nullptr;
}

void register_shape_bindings(py::module_& m) {
  m.def(
      "_plan_shapes",
      [](const std::string& name, bool iterator, const std::vector<int>& size_args) {
        set_shapes(name, iterator);
        uint32_t mask = 0;
        for (int a : size_args) {
          TORCH_CHECK(a >= 0 && a < 32, "_plan_shapes: argument index ", a, " out of range");
          mask |= 1u << a;
        }
        if (mask) set_size_args(name, mask);
      },
      py::arg("name"), py::arg("iterator") = false, py::arg("size_args") = std::vector<int>());
  m.def("_plan_classes", []() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    return describe_generic();
  });
  // The serial of the size-generic recording in progress (0: none).
  m.def("_plan_symbolic", []() -> uint64_t {
    Recording* rec = symbolic_recording();
    return rec ? rec->serial : 0;
  });
  m.def("_plan_sym_operand", [](const at::Tensor& t) -> int {
    Recording* rec = symbolic_recording();
    if (!rec) return -1;
    const auto& ops = *rec->operands;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].impl == t.unsafeGetTensorImpl()) return static_cast<int>(k);
    }
    auto view = rec->operand_views.find(t.unsafeGetTensorImpl());
    return view != rec->operand_views.end() ? view->second : -1;
  });
  // The variable of the iterator's operand k, an integer CPU scalar of this value (-1:
  // none: not such a scalar, or not the iterator path).
  m.def("_plan_sym_scalar", [](int k, int64_t value) -> int {
    Recording* rec = symbolic_recording();
    if (!rec || !rec->vars || !rec->call || rec->call != current_call || k < 0 ||
        static_cast<size_t>(k) >= rec->operands->size()) {
      return -1;  // not the recorded iterator's own Python (an op nested in it)
    }
    const Operand& op = (*rec->operands)[k];
    const size_t var = static_cast<size_t>(k) * kVarsPerOperand;
    if (op.data != nullptr || op.tensor.defined() || var >= rec->vars->size()) return -1;
    return (*rec->vars)[var] == value ? static_cast<int>(var) : -1;
  });
  m.def("_plan_sym_expr", [](const std::vector<std::pair<int, int64_t>>& code) -> int {
    Recording* rec = symbolic_recording();
    if (!rec) return -1;
    if (rec->exprs.size() >= 30000) {
      fail(*rec, "symbolic sizes");
      return -1;
    }
    Expr e;
    for (const auto& [op, arg] : code) {
      if (op < Expr::Const || op > Expr::Neg) {
        fail(*rec, "symbolic sizes");
        return -1;
      }
      e.code.emplace_back(static_cast<uint8_t>(op), arg);
    }
    rec->exprs.push_back(std::move(e));
    return static_cast<int>(rec->exprs.size()) - 1;
  });
  m.def("_plan_sym_guard", [](int expr, int kind, bool holds) {
    Recording* rec = symbolic_recording();
    if (!rec) return;
    if (!valid_sym(*rec, expr) || (kind != Guard::Negative && kind != Guard::Zero)) {
      return fail(*rec, "symbolic sizes");
    }
    rec->guards.push_back(Guard{static_cast<int16_t>(expr), static_cast<uint8_t>(kind), holds});
  });
  // The temporary allocated at `ptr` has expression `expr` bytes.
  m.def("_plan_sym_alloc", [](uint64_t ptr, int expr) {
    Recording* rec = symbolic_recording();
    if (!rec) return;
    if (!valid_sym(*rec, expr)) return fail(*rec, "symbolic sizes");
    for (size_t j = rec->temps.size(); j-- > 0;) {
      if (rec->temps[j].live && reinterpret_cast<uint64_t>(rec->temps[j].ptr) == ptr) {
        rec->temps[j].sym = static_cast<int16_t>(expr);
        return;
      }
    }
    fail(*rec, "symbolic sizes");
  });
  // Tensor `t` (a result, say) has these sizes' and strides' expressions (-1: as it is).
  m.def("_plan_sym_tensor",
        [](const at::Tensor& t, const std::vector<int>& sizes, const std::vector<int>& strides) {
          Recording* rec = symbolic_recording();
          if (!rec) return;
          auto ids = [&](const std::vector<int>& xs, std::vector<int16_t>& out) {
            if (static_cast<int64_t>(xs.size()) != t.dim()) return false;
            for (int x : xs) {
              if (x >= 0 && !valid_sym(*rec, x)) return false;
              out.push_back(static_cast<int16_t>(x));
            }
            return true;
          };
          std::vector<int16_t> a, b;
          if (!ids(sizes, a) || !ids(strides, b)) return fail(*rec, "symbolic sizes");
          rec->sym_tensors[t.unsafeGetTensorImpl()] = {std::move(a), std::move(b)};
        });
  // The op's result's ints that are expressions: (position among its leaves, expression).
  m.def("_plan_sym_results", [](const std::vector<std::pair<int, int>>& results) {
    Recording* rec = symbolic_recording();
    if (!rec || !rec->call || rec->call != current_call) return;  // a nested op's result
    for (const auto& [position, expr] : results) {
      if (!valid_sym(*rec, expr)) return fail(*rec, "symbolic sizes");
      rec->sym_results.emplace_back(position, static_cast<int16_t>(expr));
    }
  });
}

}  // namespace

void register_bindings(py::module_& m) {
  m.def("_plan_recording", []() { return active != nullptr && active->paused == 0; });
  m.def("_plan_pause", [](bool on) {
    if (active) active->paused += on ? 1 : -1;
  });
  m.def("_plan_retry", []() {
    if (active) active->retry = true;
  });
  m.def("_plan_unreplayable", [](const std::string& why) { note_unreplayable(why.c_str()); });
  m.def("_plan_observe_cuda", &observe_cuda, py::arg("grid"), py::arg("function"),
        py::arg("threads"), py::arg("shared"), py::arg("types"), py::arg("values"), py::arg("name"),
        py::arg("marks") = std::vector<std::tuple<int, int, int>>(),
        py::arg("grid_syms") = std::vector<int>(), py::arg("scratch") = 0);
  register_shape_bindings(m);
  m.def("_plan_observe_host", &observe_host, py::arg("kernel"), py::arg("grid"), py::arg("args"),
        py::arg("kwargs"), py::arg("tensors"), py::arg("name"),
        py::arg("marks") = std::vector<std::tuple<int, int>>());
  // Per-call numbers (launch/PlanKey.h): declare an op's, and mark one in a recording.
  m.def("_plan_numbers", [](const std::string& name, const std::vector<int>& args) {
    uint32_t mask = 0;
    for (int a : args) {
      TORCH_CHECK(a >= 0 && a < 32, "_plan_numbers: argument index ", a, " out of range");
      mask |= 1u << a;
    }
    set_call_numbers(name, mask);
  });
  m.def("_plan_number", [](int arg, int elem) {
    return active && active->paused == 0 && active->ok ? note_number(*active, arg, elem) : -1;
  });
  m.def("_plan_philox_draws", []() {
    return active && active->paused == 0 ? static_cast<int64_t>(active->philox.size()) : -1;
  });
  m.def("_plan_observe_callback", &observe_callback, py::arg("fn"), py::arg("args"),
        py::arg("name"), py::arg("interval_s") = 0.0);
  m.def("_plan_persistent", [](const at::Tensor& region) {
    TORCH_CHECK(region.device().type() == c10::DeviceType::PrivateUse1 && region.is_contiguous(),
                "_plan_persistent: a contiguous privateuseone tensor");
    std::lock_guard<std::mutex> lock(persistent_mutex);
    persistent().push_back(region);
  });
  m.def("_plan_enabled", []() { return enabled(); });
  // The number of cached keys that triggers an eviction (default kMaxEntries); returns
  // the previous one. For tests.
  m.def("_plan_set_capacity", [](size_t n) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const size_t old = max_entries;
    max_entries = std::max<size_t>(n, 1);
    return old;
  });
  m.def("_plan_stats", []() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    py::dict d;
    d["replayed"] = stats.replayed.load();
    d["recorded"] = stats.recorded.load();
    d["uncacheable"] = stats.uncacheable.load();
    d["slow"] = stats.slow.load();
    d["launched"] = stats.launched.load();
    d["retried"] = stats.retried.load();
    d["generalized"] = stats.generalized.load();
    d["entries"] = cache.size();
    d["shape_classes"] = generic_classes();
    py::dict why;
    for (const auto& [k, v] : reasons) why[py::str(k)] = v;
    d["reasons"] = why;
    return d;
  });
  m.def("_plan_clear", []() {
    std::lock_guard<std::mutex> lock(cache_mutex);
    cache.clear();
    clear_generic();
    reasons.clear();
  });
  // The cached plans whose key contains `needle`: (key, temporaries' bytes, steps), each
  // step (kind, kernel, grid, [(operand/temp/persistent or value, index, delta/bits)]).
  m.def("_plan_describe", [](const std::string& needle) {
    static const char* kinds[] = {"cuda", "host", "copy", "memset", "callback", "philox"};
    static const char* bases[] = {"operand", "temp", "persistent"};
    std::lock_guard<std::mutex> lock(cache_mutex);
    py::list out;
    for (const auto& [key, plan] : cache) {
      if (!plan || key.find(needle) == std::string::npos) continue;
      py::list steps;
      auto ref = [](const Ref& r) {
        return py::make_tuple(bases[static_cast<int>(r.base)], r.index, r.delta);
      };
      for (const Step& s : plan->steps) {
        py::list params;
        for (const Param& p : s.params) {
          if (p.is_ref) {
            params.append(ref(p.ref));
          } else if (p.sym >= 0) {
            params.append(py::make_tuple("sym", p.size, p.sym));
          } else {
            params.append(py::make_tuple("value", p.size, p.bits));
          }
        }
        if (s.kind == Step::Kind::Copy || s.kind == Step::Kind::Memset) {
          params.append(ref(s.dst));
          if (s.kind == Step::Kind::Copy) params.append(ref(s.src));
          params.append(py::make_tuple("bytes", s.bytes, s.value));
        }
        steps.append(py::make_tuple(kinds[static_cast<int>(s.kind)], s.name,
                                    py::make_tuple(s.grid[0], s.grid[1], s.grid[2]), params));
      }
      out.append(py::make_tuple(py::bytes(key), plan->temps, steps));
    }
    return out;
  });
}

}  // namespace torch_ext::launch::plan
