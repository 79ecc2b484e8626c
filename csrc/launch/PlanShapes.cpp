// Shape classes of launch plans (launch/Plan.h): one plan for a range of sizes.
//
// An op declared `@kernel(..., shapes=True)` reads its operands' sizes and strides
// through ops/_symbolic.py, which hands its Python ints that carry their expression over
// the call's variables (each operand's sizes and strides). While such an op records, the
// integers its launches take (kernel arguments, grids, temporaries' sizes, its result's
// sizes, strides and ints) arrive as expressions, and every decision its Python made on
// a size arrives as a guard. The plan then replays for any call of its shape class (the
// key without sizes and strides: launch/PlanKey.h) whose variables satisfy its guards.
//
// A plan is trusted for a variable only once a second recording, at a value of that
// variable the first did not have, gave the same plan (expressions, guards, constants):
// a size the Python used without tracing it (read through C++, say) shows up there as a
// constant that changed, and the class ends (its calls keep exact keys).

#include "launch/PlanImpl.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace torch_ext::launch::plan {
namespace detail {

std::vector<int64_t> iterator_vars(at::TensorIteratorBase& iter) {
  const int n = iter.ntensors();
  std::vector<int64_t> vars(static_cast<size_t>(n) * kVarsPerOperand, 0);
  // In the views' order (Launcher.cpp pointwise_python): the iterator's, reversed.
  const auto shape = iter.shape();
  const auto nd = static_cast<int64_t>(shape.size());
  const int64_t dims = std::min<int64_t>(nd, kVarDims);
  for (int i = 0; i < n; ++i) {
    if (iter.is_cpu_scalar(i)) {
      if (scalar_is_variable(iter.dtype(i))) {
        vars[i * kVarsPerOperand] = at::Tensor(iter.tensor_base(i)).item().toLong();
      }
      continue;
    }
    const auto item = static_cast<int64_t>(c10::elementSize(iter.dtype(i)));
    const auto strides = iter.strides(i);
    for (int64_t d = 0; d < dims; ++d) {
      vars[i * kVarsPerOperand + d] = shape[nd - 1 - d];
      vars[i * kVarsPerOperand + kVarDims + d] = strides[nd - 1 - d] / item;
    }
  }
  return vars;
}

std::vector<int64_t> call_vars(const std::vector<Operand>& ops, const std::vector<Arg>& args,
                               uint32_t mask) {
  std::vector<int64_t> vars = shape_vars(ops);
  if (!mask) return vars;
  const size_t base = vars.size();
  vars.resize(base + args.size(), 0);
  for (size_t i = 0; i < args.size() && i < 32; ++i) {
    if ((mask >> i) & 1u && args[i].value.isInt()) vars[base + i] = args[i].value.toInt();
  }
  return vars;
}

std::vector<int64_t> shape_vars(const std::vector<Operand>& ops) {
  std::vector<int64_t> vars(ops.size() * kVarsPerOperand, 0);
  for (size_t k = 0; k < ops.size(); ++k) {
    const at::Tensor& t = ops[k].tensor;
    if (!t.defined()) continue;
    const int64_t n = std::min<int64_t>(t.dim(), kVarDims);
    for (int64_t d = 0; d < n; ++d) {
      vars[k * kVarsPerOperand + d] = t.size(d);
      vars[k * kVarsPerOperand + kVarDims + d] = t.stride(d);
    }
  }
  return vars;
}

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

bool eval(const Expr& e, const std::vector<int64_t>& vars, int64_t& out) {
  int64_t stack[32];
  int top = 0;
  for (const auto& [op, arg] : e.code) {
    if (op == Expr::Const || op == Expr::Var) {
      if (top == 32) return false;
      if (op == Expr::Var && (arg < 0 || static_cast<size_t>(arg) >= vars.size())) return false;
      stack[top++] = op == Expr::Const ? arg : vars[arg];
      continue;
    }
    if (op == Expr::Neg) {
      if (top < 1) return false;
      stack[top - 1] = -stack[top - 1];
      continue;
    }
    if (top < 2) return false;
    const int64_t b = stack[--top];
    int64_t& a = stack[top - 1];
    switch (op) {
      case Expr::Add:
        a += b;
        break;
      case Expr::Sub:
        a -= b;
        break;
      case Expr::Mul:
        a *= b;
        break;
      case Expr::FloorDiv:
        if (b == 0) return false;
        a = floor_div(a, b);
        break;
      case Expr::Mod:
        if (b == 0) return false;
        a = a - floor_div(a, b) * b;
        break;
      default:
        return false;
    }
  }
  if (top != 1) return false;
  out = stack[0];
  return true;
}

struct Candidate {
  std::shared_ptr<const Plan> plan;
  std::vector<int64_t> base;      // the variables it was recorded at
  std::vector<uint8_t> verified;  // variables a second recording varied
};

struct ShapeClass {
  std::vector<Candidate> candidates;
  bool ended = false;
};

std::unordered_map<std::string, ShapeClass> classes;  // under cache_mutex

bool covers(const Candidate& c, const std::vector<int64_t>& vars) {
  if (vars.size() != c.base.size()) return false;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i] != c.base[i] && !c.verified[i]) return false;
  }
  return true;
}

bool same_ref(const Ref& a, const Ref& b) {
  // A persistent region is the bounds-check flag ring: each recording takes a slot of
  // its own, which is no size's doing (the class's plans keep their own slot).
  if (a.base == Ref::Base::Persistent) return b.base == a.base && a.index == b.index;
  return a.base == b.base && a.index == b.index && a.delta == b.delta;
}

bool same_view(const View& a, const View& b) {
  if (!same_ref(a.ref, b.ref) || a.device != b.device || a.dtype != b.dtype ||
      a.pointer_only != b.pointer_only || a.size_syms != b.size_syms ||
      a.stride_syms != b.stride_syms) {
    return false;
  }
  if (a.pointer_only) return true;
  if (a.sizes.size() != b.sizes.size() || a.strides.size() != b.strides.size()) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    if ((a.size_syms.empty() || a.size_syms[d] < 0) && a.sizes[d] != b.sizes[d]) return false;
    if ((a.stride_syms.empty() || a.stride_syms[d] < 0) && a.strides[d] != b.strides[d]) {
      return false;
    }
  }
  return true;
}

bool same_constant(const c10::IValue& a, const c10::IValue& b) {
  if (a.isNone() || b.isNone()) return a.isNone() && b.isNone();
  if (a.isBool() || b.isBool()) return a.isBool() && b.isBool() && a.toBool() == b.toBool();
  if (a.isInt() || b.isInt()) return a.isInt() && b.isInt() && a.toInt() == b.toInt();
  if (a.isDouble() && b.isDouble()) {
    const double x = a.toDouble(), y = b.toDouble();
    return std::memcmp(&x, &y, sizeof(x)) == 0;
  }
  return false;
}

bool same_result(const Result& a, const Result& b) {
  if (a.kind != b.kind || a.sym != b.sym || a.operand != b.operand) return false;
  switch (a.kind) {
    case Result::Kind::Constant:
      return a.sym >= 0 || same_constant(a.constant, b.constant);
    case Result::Kind::Operand:
      return true;
    case Result::Kind::View:
      return same_view(a.view, b.view);
    case Result::Kind::Tuple:
      if (a.elems.size() != b.elems.size()) return false;
      for (size_t i = 0; i < a.elems.size(); ++i) {
        if (!same_result(a.elems[i], b.elems[i])) return false;
      }
      return true;
  }
  return false;
}

bool same_python(const std::shared_ptr<PyRef>& a, const std::shared_ptr<PyRef>& b, bool identity) {
  if (!a || !b) return !a && !b;
  if (identity) return a->p == b->p;
  py::gil_scoped_acquire gil;
  try {
    static auto* same =
        new py::object(py::module_::import("torch_ext.ops._launch").attr("same_recorded"));
    return (*same)(py::handle(a->p), py::handle(b->p)).cast<bool>();
  } catch (py::error_already_set&) {
    return false;
  }
}

bool same_step(const Step& a, const Step& b) {
  if (a.kind != b.kind || a.name != b.name) return false;
  switch (a.kind) {
    case Step::Kind::Cuda:
      if (a.function != b.function || a.threads != b.threads || a.shared != b.shared ||
          a.scratch != b.scratch || a.params.size() != b.params.size()) {
        return false;
      }
      for (int d = 0; d < 3; ++d) {
        if (a.grid_syms[d] != b.grid_syms[d]) return false;
        if (a.grid_syms[d] < 0 && a.grid[d] != b.grid[d]) return false;
      }
      for (size_t k = 0; k < a.params.size(); ++k) {
        const Param& p = a.params[k];
        const Param& q = b.params[k];
        if (p.size != q.size || p.is_ref != q.is_ref || p.philox != q.philox ||
            p.ordinal != q.ordinal || p.number != q.number || p.sym != q.sym) {
          return false;
        }
        if (p.is_ref && !same_ref(p.ref, q.ref)) return false;
        if (!p.is_ref && p.philox < 0 && p.number < 0 && p.sym < 0 && p.bits != q.bits) {
          return false;
        }
      }
      return true;
    case Step::Kind::Callback:
      if (a.interval_ns != b.interval_ns) return false;
      [[fallthrough]];
    case Step::Kind::Host:
      if (a.tensors.size() != b.tensors.size()) return false;
      for (size_t k = 0; k < a.tensors.size(); ++k) {
        if (!same_view(a.tensors[k], b.tensors[k])) return false;
      }
      return same_python(a.kernel, b.kernel, true) && same_python(a.py_grid, b.py_grid, false) &&
             same_python(a.args, b.args, false) && same_python(a.kwargs, b.kwargs, false);
    case Step::Kind::Philox:
      return a.device == b.device && a.bytes == b.bytes;
    case Step::Kind::Copy:
      return same_ref(a.dst, b.dst) && same_ref(a.src, b.src) && a.bytes == b.bytes;
    case Step::Kind::Memset:
      return same_ref(a.dst, b.dst) && a.bytes == b.bytes && a.value == b.value;
  }
  return false;
}

bool syms_in_range(const View& v, size_t n) {
  for (int16_t s : v.size_syms) {
    if (s >= static_cast<int16_t>(n)) return false;
  }
  for (int16_t s : v.stride_syms) {
    if (s >= static_cast<int16_t>(n)) return false;
  }
  return true;
}

bool result_syms(const Recording& r, Result& res, int& position, size_t n) {
  if (res.kind == Result::Kind::Tuple) {
    for (auto& e : res.elems) {
      if (!result_syms(r, e, position, n)) return false;
    }
    return true;
  }
  const int here = position++;
  for (const auto& [index, sym] : r.sym_results) {
    if (index == here) {
      if (res.kind != Result::Kind::Constant || !res.constant.isInt()) return false;
      res.sym = sym;
    }
  }
  return res.kind != Result::Kind::View || syms_in_range(res.view, n);
}

}  // namespace

// Two recordings of one shape class made the same plan: what differs between them is
// what their expressions compute.
bool same_plan(const Plan& a, const Plan& b) {
  if (a.exprs != b.exprs || a.guards != b.guards || a.temp_syms != b.temp_syms ||
      a.temps.size() != b.temps.size() || a.steps.size() != b.steps.size() ||
      !(a.numbers == b.numbers)) {
    return false;
  }
  for (size_t j = 0; j < a.temps.size(); ++j) {
    if (a.temp_syms[j] < 0 && a.temps[j] != b.temps[j]) return false;
  }
  for (size_t i = 0; i < a.steps.size(); ++i) {
    if (!same_step(a.steps[i], b.steps[i])) return false;
  }
  return same_result(a.result, b.result);
}

bool eval_all(const std::vector<Expr>& exprs, const std::vector<int64_t>& vars,
              std::vector<int64_t>& out) {
  out.resize(exprs.size());
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (!eval(exprs[i], vars, out[i])) return false;
  }
  return true;
}

bool guards_hold(const Plan& plan, const std::vector<int64_t>& vars) {
  for (const Guard& g : plan.guards) {
    int64_t v;
    if (!eval(plan.exprs[g.expr], vars, v)) return false;
    const bool fact = g.kind == Guard::Negative ? v < 0 : v == 0;
    if (fact != g.holds) return false;
  }
  return true;
}

// A copy of size-generic plan `p` that replays at `vars` (its values computed there).
std::shared_ptr<const Plan> at_sizes(const Plan& p, const std::vector<int64_t>& vars) {
  auto copy = std::make_shared<Plan>();
  copy->temps = p.temps;
  copy->numbers = p.numbers;
  copy->steps = p.steps;
  copy->result = p.result;
  copy->launches = p.launches;
  copy->symbolic = true;
  copy->exprs = p.exprs;
  copy->guards = p.guards;
  copy->temp_syms = p.temp_syms;
  copy->origin = &p;
  if (!eval_all(copy->exprs, vars, copy->values)) return nullptr;
  return copy;
}

std::shared_ptr<const Plan> find_generic(const std::string& ckey,
                                         const std::vector<int64_t>& vars) {
  auto it = classes.find(ckey);
  if (it == classes.end() || it->second.ended) return nullptr;
  for (const Candidate& c : it->second.candidates) {
    if (covers(c, vars) && guards_hold(*c.plan, vars)) return at_sizes(*c.plan, vars);
  }
  return nullptr;
}

std::shared_ptr<const Plan> region_plan(const std::string& ckey, const std::vector<int64_t>& vars) {
  auto it = classes.find(ckey);
  if (it == classes.end() || it->second.ended) return nullptr;
  for (const Candidate& c : it->second.candidates) {
    if (c.base.size() == vars.size() && guards_hold(*c.plan, vars)) return c.plan;
  }
  return nullptr;
}

void learn_generic(const char* name, const std::string& ckey, const std::vector<int64_t>& vars,
                   const std::shared_ptr<const Plan>& plan, const Plan* compared, bool same) {
  if (classes.size() >= max_entries) classes.clear();
  ShapeClass& cls = classes[ckey];
  if (cls.ended) return;
  if (compared) {
    for (Candidate& c : cls.candidates) {
      if (c.plan.get() != compared) continue;
      if (same) {
        for (size_t i = 0; i < vars.size() && i < c.base.size(); ++i) {
          if (vars[i] != c.base[i]) c.verified[i] = 1;
        }
        return;
      }
      // The op's launches changed with a size its Python did not trace: this class
      // keeps exact keys, and what it replayed at other sizes is dropped.
      cls.ended = true;
      reasons[std::string(name) + ": a size not traced (shape class ended)"]++;
      for (auto e = cache.begin(); e != cache.end();) {
        bool ours = false;
        for (const Candidate& k : cls.candidates) {
          ours = ours || (e->second && (e->second == k.plan || e->second->origin == k.plan.get()));
        }
        e = ours ? cache.erase(e) : std::next(e);
      }
      cls.candidates.clear();
      return;
    }
    return;  // the compared plan went meanwhile (an eviction)
  }
  if (cls.candidates.size() >= kMaxCandidates) {  // sizes moved on (a growing cache):
    // the oldest candidate no second recording verified goes first, else the oldest
    auto old = std::find_if(cls.candidates.begin(), cls.candidates.end(), [](const Candidate& c) {
      return std::none_of(c.verified.begin(), c.verified.end(), [](uint8_t v) { return v; });
    });
    cls.candidates.erase(old != cls.candidates.end() ? old : cls.candidates.begin());
  }
  cls.candidates.push_back(Candidate{plan, vars, std::vector<uint8_t>(vars.size(), 0)});
}

void clear_generic() { classes.clear(); }

py::list describe_generic() {
  py::list out;
  for (const auto& [ckey, cls] : classes) {
    py::list cands;
    for (const Candidate& c : cls.candidates) {
      py::list guards;
      for (const Guard& g : c.plan->guards) {
        int64_t v = 0;
        const bool ok = eval(c.plan->exprs[g.expr], c.base, v);
        guards.append(py::make_tuple(c.plan->exprs[g.expr].code, g.kind, g.holds, ok, v));
      }
      int64_t verified = 0;
      for (uint8_t x : c.verified) verified += x;
      cands.append(py::make_tuple(verified, guards, c.base));
    }
    out.append(py::make_tuple(py::bytes(ckey), cls.ended, cands));
  }
  return out;
}

size_t generic_classes() { return classes.size(); }

bool finish_symbolic(Recording& r, Plan& plan) {
  const size_t n = r.exprs.size();
  plan.symbolic = true;
  plan.exprs = std::move(r.exprs);
  if (!r.vars || !eval_all(plan.exprs, *r.vars, plan.values)) return false;
  plan.guards = std::move(r.guards);
  for (const Temp& t : r.temps) plan.temp_syms.push_back(t.sym);
  for (const Guard& g : plan.guards) {
    if (g.expr < 0 || static_cast<size_t>(g.expr) >= n) return false;
  }
  for (const Step& s : plan.steps) {
    for (const Param& p : s.params) {
      if (p.sym >= static_cast<int16_t>(n)) return false;
    }
    for (int16_t g : s.grid_syms) {
      if (g >= static_cast<int16_t>(n)) return false;
    }
    for (const View& v : s.tensors) {
      if (!syms_in_range(v, n)) return false;
    }
  }
  int position = 0;
  return result_syms(r, plan.result, position, n);
}

}  // namespace detail
}  // namespace torch_ext::launch::plan
