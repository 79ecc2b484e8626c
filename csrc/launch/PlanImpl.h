#pragma once
// Launch plans' internals (launch/Plan.h), shared by Plan.cpp (keys to plans,
// recording, replay) and PlanPython.cpp (what Python calls: the observers of
// launches, and the _plan_* functions of torch_ext._C).

#include "launch/PlanKey.h"

#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_ext::launch::plan::detail {

namespace py = pybind11;

// Multi-tensor kernels take a pointer, a size and a first block per slot (110 slots for
// one list: 330 parameters and more); at 256 the optimizers' foreach launches stayed
// on Python ("launch not replayable", "parameter layout" in _plan_stats()'s reasons).
constexpr size_t kMaxParams = 1024;
constexpr size_t kMaxSteps = 4096;
constexpr size_t kMaxEntries = 16384;  // cached keys before an eviction (max_entries)

// ---- shape classes (PlanShapes.cpp) ----
// A size-generic plan's integers are expressions over the call's sizes and strides:
// variable 16 k + d is operand k's size d, 16 k + 8 + d its stride d (d < 8).
constexpr int kVarsPerOperand = 16;
constexpr int kVarDims = 8;
constexpr size_t kMaxCandidates = 16;  // plans of one shape class (guard regions)

// Postfix code over int64: Const pushes `arg`, Var pushes variable `arg`; the others pop
// their operands. FloorDiv and Mod round as Python's // and %.
struct Expr {
  enum Op : uint8_t { Const, Var, Add, Sub, Mul, FloorDiv, Mod, Neg };
  std::vector<std::pair<uint8_t, int64_t>> code;
  bool operator==(const Expr& o) const { return code == o.code; }
};

// A fact the op's Python relied on: `expr < 0` (kind Negative) or `expr == 0` (kind
// Zero) had the value `holds`. A plan replays only where all its guards still hold.
struct Guard {
  enum Kind : uint8_t { Negative, Zero };
  int16_t expr;
  uint8_t kind;
  bool holds;
  bool operator==(const Guard& o) const {
    return expr == o.expr && kind == o.kind && holds == o.holds;
  }
};

// Where a pointer points: operand, temporary or persistent region `index`,
// plus bytes from its start (an operand's: its data pointer).
struct Ref {
  enum class Base : uint8_t { Operand, Temp, Persistent } base = Base::Operand;
  int16_t index = -1;
  int64_t delta = 0;
  bool temp() const { return base == Base::Temp; }
};

// Memory that outlives every plan (e.g. the bounds-check flag ring):
// registered by Python, kept alive here.
extern std::mutex persistent_mutex;
std::vector<at::Tensor>& persistent();

// A Python object owned by a plan; released with the GIL, leaked at exit.
struct PyRef {
  PyObject* p;
  explicit PyRef(py::handle h) : p(h.inc_ref().ptr()) {}
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      Py_DECREF(p);
    }
  }
};

// A tensor rebuilt at replay: a view of an operand's or a temporary's storage.
struct View {
  Ref ref;  // index -1: an empty tensor (no memory), rebuilt as a new one
  c10::DeviceIndex device = 0;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> sizes, strides;
  // Size-generic plans: each size's and stride's expression (-1: the recorded value);
  // empty: all recorded. A kernel argument's view keeps only its pointer (pointer_only).
  std::vector<int16_t> size_syms, stride_syms;
  bool pointer_only = false;
};

struct Param {  // one raw kernel parameter (cuda driver)
  uint8_t size = 8;
  bool is_ref = false;
  Ref ref;
  uint64_t bits = 0;
  int8_t philox = -1;  // 0: the seed, 1: the offset of Philox draw `ordinal`
  int16_t ordinal = 0;
  int16_t number = -1;  // >= 0: per-call number `number` of the plan (fp32 or fp64)
  int16_t sym = -1;     // >= 0: the value of expression `sym` (size-generic plans)
};

struct Step {
  enum class Kind : uint8_t { Cuda, Host, Copy, Memset, Callback, Philox } kind = Kind::Cuda;
  std::string name;  // the kernel, for profiler ranges
  // Cuda: cuLaunchKernel(function, grid, threads, shared, params).
  void* function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  int16_t grid_syms[3] = {-1, -1, -1};  // expressions of the grid (size-generic plans)
  unsigned threads = 0, shared = 0;
  std::vector<Param> params;
  // Bytes of global scratch a program (Triton's, for tensor descriptors made on the
  // device), allocated on each replay and passed as parameter `scratch_param`.
  uint32_t scratch = 0;
  int16_t scratch_param = -1;
  // Host: ops._launch.replay(kernel, grid, args, kwargs, tensors).
  // Callback: kernel(*args) (e.g. the host driver's bounds check); with an interval,
  // at most once per `interval_ns` of host time over all such steps (skipped without
  // taking the GIL: the cuda driver's bounds poll, which itself polls no more often).
  std::shared_ptr<PyRef> kernel, py_grid, args, kwargs;
  int64_t interval_ns = 0;
  std::vector<View> tensors;
  // Philox: reserve `bytes` counter values of the device's default generator.
  c10::DeviceIndex device = 0;
  // Copy / Memset.
  Ref dst, src;
  size_t bytes = 0;
  int value = 0;
};

struct Result {
  enum class Kind : uint8_t { Constant, Operand, View, Tuple } kind = Kind::Constant;
  c10::IValue constant;
  int16_t sym = -1;  // a Constant int that is expression `sym` (size-generic plans)
  int16_t operand = -1;
  View view;
  std::vector<Result> elems;
};

// A per-call number: argument `arg` of the call, element `elem` of a list (-1: the
// argument itself).
struct Number {
  int16_t arg;
  int32_t elem;
  bool operator==(const Number& o) const { return arg == o.arg && elem == o.elem; }
};

struct Plan {
  // Replayed since the last eviction: kept by the next one (second chance).
  mutable std::atomic<bool> used{false};
  std::vector<size_t> temps;    // bytes of each temporary
  std::vector<Number> numbers;  // read from each replay's arguments
  std::vector<Step> steps;
  Result result;
  int64_t launches = 0;
  // Size-generic plans (an op declared shapes=True): expressions over the call's sizes
  // and strides, the guards under which the plan holds, each temporary's size.
  bool symbolic = false;
  std::vector<Expr> exprs;
  std::vector<Guard> guards;
  std::vector<int16_t> temp_syms;  // -1: the recorded size
  // The expressions' values at the sizes this plan replays for (cached under an exact
  // key: its own sizes), computed once, so that a replay evaluates nothing.
  std::vector<int64_t> values;
  const Plan* origin = nullptr;  // the class's plan this one was made from at other sizes
};

struct Temp {
  char* ptr;
  size_t bytes;
  bool live;
  int16_t sym = -1;
};

struct Recording {
  const std::vector<Operand>* operands;
  std::vector<Temp> temps;
  std::vector<Step> steps;
  bool ok = true;
  bool retry = false;
  int paused = 0;
  std::string why;
  // Philox draws so far, and whether a launch took each one's seed and offset.
  std::vector<std::pair<bool, bool>> philox;
  // The call's arguments (call(), not pointwise()), which of them hold per-call
  // numbers (set_call_numbers), and the numbers the launches took so far.
  const std::vector<Arg>* args = nullptr;
  uint32_t number_args = 0;
  std::vector<Number> numbers;
  // A size-generic recording (PlanShapes.cpp): its serial (Python keys its expression
  // table by it), the expressions and guards Python sent, the tensors it made with
  // symbolic sizes and strides, and the result's symbolic ints (by tuple position).
  uint64_t serial = 0;
  std::vector<Expr> exprs;
  std::vector<Guard> guards;
  std::unordered_map<const void*, std::pair<std::vector<int16_t>, std::vector<int16_t>>>
      sym_tensors;
  std::vector<std::pair<int, int16_t>> sym_results;
  // Tensors that stand for operand k (the iterator path's views of its operands), and
  // the call's variables (an integer CPU scalar's value is one on the iterator path).
  std::unordered_map<const void*, int> operand_views;
  const std::vector<int64_t>* vars = nullptr;
  const void* call = nullptr;  // the call recorded (its iterator or arguments: CallScope)
  bool symbolic() const { return serial != 0; }
};

extern thread_local Recording* active;
extern thread_local const void* current_call;  // launch/Plan.h CallScope

void fail(Recording& r, const char* why) noexcept;

struct Stats {
  std::atomic<int64_t> replayed{0}, recorded{0}, uncacheable{0}, slow{0}, launched{0}, retried{0};
  std::atomic<int64_t> generalized{0};  // calls replayed from a plan recorded at other sizes
};
extern Stats stats;

extern std::mutex cache_mutex;
// nullptr: calls with this key stay on Python.
extern std::unordered_map<std::string, std::shared_ptr<const Plan>> cache;
extern std::map<std::string, int64_t> reasons;  // why keys stayed on Python (under cache_mutex)
extern size_t max_entries;  // kMaxEntries; _plan_set_capacity changes it (tests)
// A full cache (under cache_mutex): drops the keys kept on Python and the plans not
// replayed since the last eviction; clears it all if that frees less than a quarter.
void evict();

bool enabled();
bool is_cuda();
// Replays `plan` for a call with these operands (PlanReplay.cpp); `args`: the call's,
// for its per-call numbers.
c10::IValue replay(const Plan& plan, const std::vector<Operand>& ops, c10::DeviceIndex device,
                   const std::vector<Arg>* args);
// The operand, temporary or persistent region `p` points into (false: none).
bool resolve(const Recording& r, const void* p, Ref& out);
at::Tensor persistent_region(int16_t index);
// `t` as a view to rebuild at replay (false: its memory is foreign to the recording).
bool make_view(const Recording& r, const at::Tensor& t, View& v);
// The floating-point value of `n` in `args` (false: not there, or not a float).
bool number_value(const std::vector<Arg>& args, const Number& n, double& out);
// The ordinal of per-call number (arg, elem) in the recording, added if new; -1 when
// the argument is not declared per-call or the value is not a float.
int note_number(Recording& r, int arg, int elem);
// Every float of the recording's per-call arguments reached a launch marked.
bool all_numbers_marked(const Recording& r);

// ---- shape classes (PlanShapes.cpp) ----
// Ops declared size-generic (`@kernel(..., shapes=True)`; every pointwise kernel on the
// TensorIterator path): by name, for call() or for the iterator path.
void set_shapes(const std::string& name, bool iterator);
bool shapes_declared(const char* name, bool iterator);
// The call's variables: each operand's sizes and strides (kVarsPerOperand each); on the
// iterator path the iterator's shape and each operand's strides in elements.
std::vector<int64_t> shape_vars(const std::vector<Operand>& ops);
std::vector<int64_t> iterator_vars(at::TensorIteratorBase& iter);
// Integer arguments an op declares size-like (`@kernel(..., size_args=(i, ...))`: e.g.
// the lengths attention's backward is given): out of its class key, variables after the
// operands' (a bit per argument index).
void set_size_args(const std::string& name, uint32_t mask);
uint32_t size_args(const char* name);
std::vector<int64_t> call_vars(const std::vector<Operand>& ops, const std::vector<Arg>& args,
                               uint32_t mask);
// Each expression's value at `vars` (false: a division by zero).
bool eval_all(const std::vector<Expr>& exprs, const std::vector<int64_t>& vars,
              std::vector<int64_t>& out);
bool guards_hold(const Plan& plan, const std::vector<int64_t>& vars);
// A plan of shape class `ckey` that holds at `vars`, with its values there (nullptr:
// none); under cache_mutex.
std::shared_ptr<const Plan> find_generic(const std::string& ckey, const std::vector<int64_t>& vars);
// The class's plan whose guards hold at `vars` (the one a recording there verifies), or
// nullptr; under cache_mutex.
std::shared_ptr<const Plan> region_plan(const std::string& ckey, const std::vector<int64_t>& vars);
// Two recordings of one class made the same plan (may call Python: not under
// cache_mutex, since comparing callback arguments must not reach an op).
bool same_plan(const Plan& a, const Plan& b);
// A recording of shape class `ckey` made at `vars`: with `compared` (its region's plan,
// and whether `plan` was the same), verifies the variables that differ or ends the
// class (its op's Python used a size it did not trace); without, `plan` becomes the
// class's plan for a new region. Under cache_mutex.
void learn_generic(const char* name, const std::string& ckey, const std::vector<int64_t>& vars,
                   const std::shared_ptr<const Plan>& plan, const Plan* compared, bool same);
void clear_generic();  // under cache_mutex
// (class key, ended, [(verified variables, [(guard code, kind, holds, evaluates, value at
// the candidate's own sizes)], variables)]) of each shape class; under cache_mutex.
py::list describe_generic();
size_t generic_classes();
// The recording's symbolic parts moved into `plan` (false: they do not fit it).
bool finish_symbolic(Recording& r, Plan& plan);

}  // namespace torch_ext::launch::plan::detail
