#include "launch/Launcher.h"

#include "launch/Plan.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace py = pybind11;

namespace torch_ext::launch {
namespace {

// Cached registry lookups. Leaked on purpose: Python objects must not be
// released by static destructors after the interpreter is gone.
std::unordered_map<std::string, py::object>& kernel_cache(bool iterator) {
  static auto* calls = new std::unordered_map<std::string, py::object>();
  static auto* iterators = new std::unordered_map<std::string, py::object>();
  return iterator ? *iterators : *calls;
}

py::object lookup(const char* name, bool iterator) {
  auto& cache = kernel_cache(iterator);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  py::object fn = py::module_::import("torch_ext._registry").attr("resolve")(name, iterator);
  cache.emplace(name, fn);
  return fn;
}

py::object to_py(const Arg& a) {
  if (a.value.isNone()) return py::none();
  switch (a.kind) {
    case Arg::Kind::Dtype:
      return py::cast(static_cast<at::ScalarType>(a.value.toInt()));
    case Arg::Kind::Layout:
      return py::cast(static_cast<c10::Layout>(a.value.toInt()));
    case Arg::Kind::MemoryFormat:
      return py::cast(static_cast<c10::MemoryFormat>(a.value.toInt()));
    case Arg::Kind::Plain:
      break;
  }
  return torch::jit::toPyObject(a.value);
}

c10::IValue from_py(py::handle obj) {
  if (obj.is_none()) return c10::IValue();
  if (THPVariable_Check(obj.ptr())) return c10::IValue(THPVariable_Unpack(obj.ptr()));
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    std::vector<c10::IValue> elems;
    for (auto item : obj) elems.push_back(from_py(item));
    return c10::ivalue::Tuple::create(std::move(elems));
  }
  if (py::isinstance<py::bool_>(obj)) return c10::IValue(obj.cast<bool>());
  if (py::isinstance<py::int_>(obj)) return c10::IValue(obj.cast<int64_t>());
  if (py::isinstance<py::float_>(obj)) return c10::IValue(obj.cast<double>());
  TORCH_CHECK(false, "torch_ext kernel returned an unsupported Python object of type ",
              std::string(py::str(obj.get_type())));
}

}  // namespace

// A Python exception as the torch error users read (Plan.cpp uses it too).
[[noreturn]] void rethrow_python(const char* name, py::error_already_set& e) {
  // The exception's own text, without pybind's "At:" Python traceback: the
  // user sees the op and the reason, as from any torch error.
  std::string what = py::str(e.value());
  std::string type = py::str(e.type().attr("__name__"));
  std::string msg = std::string("torch_ext kernel '") + name + "': " + what;
  if (e.matches(PyExc_TypeError)) TORCH_CHECK_TYPE(false, msg);
  if (e.matches(PyExc_ValueError)) TORCH_CHECK_VALUE(false, msg);
  if (e.matches(PyExc_NotImplementedError)) TORCH_CHECK_NOT_IMPLEMENTED(false, msg);
  if (e.matches(PyExc_IndexError)) TORCH_CHECK_INDEX(false, msg);
  static py::handle oom =
      py::object(py::module_::import("torch").attr("OutOfMemoryError")).release();
  if (e.matches(PyExc_MemoryError) || e.matches(oom)) {
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, msg);
  }
  TORCH_CHECK(false, std::string("torch_ext kernel '") + name + "': " + type + ": " + what);
}

namespace {
c10::IValue call_python(const char* name, const std::vector<Arg>& args, bool iterator) {
  std::optional<plan::CallScope> scope;  // pointwise_python set its iterator's
  if (!iterator) scope.emplace(&args);
  py::gil_scoped_acquire gil;
  try {
    py::object fn = lookup(name, iterator);
    py::tuple pyargs(args.size());
    for (size_t i = 0; i < args.size(); ++i) pyargs[i] = to_py(args[i]);
    py::object result = fn(*pyargs);
    return from_py(result);
  } catch (py::error_already_set& e) {
    rethrow_python(name, e);
  }
}
}  // namespace

c10::IValue call_boxed(const char* name, std::vector<Arg> args) {
  return plan::call(name, args, [&] { return call_python(name, args, /*iterator=*/false); });
}

namespace {

void pointwise_python(at::TensorIteratorBase& iter, const char* name, std::vector<Arg> extra) {
  if (iter.numel() == 0) return;
  const plan::CallScope scope(&iter);  // its views are this iterator's operands
  // TensorIterator orders its dimensions fastest-moving first; the views (and the
  // kernels, whose last dimension is the fastest) take them in the reverse order, the
  // memory's: else a broadcast or transposed operand's threads read a row apart.
  const auto ishape = iter.shape();
  const std::vector<int64_t> shape(ishape.rbegin(), ishape.rend());
  auto operand = [&](int i) -> c10::IValue {
    if (iter.is_cpu_scalar(i)) return c10::IValue(at::Tensor(iter.tensor_base(i)).item());
    const at::TensorBase& base = iter.tensor_base(i);
    const auto itemsize = static_cast<int64_t>(c10::elementSize(iter.dtype(i)));
    const auto istrides = iter.strides(i);
    std::vector<int64_t> strides;
    strides.reserve(shape.size());
    for (auto s = istrides.rbegin(); s != istrides.rend(); ++s) strides.push_back(*s / itemsize);
    const auto* start = static_cast<const char*>(base.storage().data());
    const int64_t offset = (static_cast<const char*>(iter.data_ptr(i)) - start) / itemsize;
    at::Tensor view = at::empty({0}, base.options().dtype(iter.dtype(i)));
    view.set_(base.storage(), offset, shape, strides);
    plan::note_operand_view(i, view);  // its sizes and strides: operand i's variables
    return c10::IValue(std::move(view));
  };
  std::vector<c10::IValue> outs, ins;
  for (int i = 0; i < iter.noutputs(); ++i) outs.push_back(operand(i));
  for (int i = iter.noutputs(); i < iter.ntensors(); ++i) ins.push_back(operand(i));
  at::ScalarType common = iter.dtype(iter.noutputs() < iter.ntensors() ? iter.noutputs() : 0);
  try {
    common = iter.common_dtype();
  } catch (const c10::Error&) {
    // Iterators built without type promotion have no common dtype.
  }
  std::vector<Arg> args;
  args.reserve(3 + extra.size());
  args.push_back(Arg{c10::ivalue::Tuple::create(std::move(outs))});
  args.push_back(Arg{c10::ivalue::Tuple::create(std::move(ins))});
  args.push_back(to_arg(common));
  for (auto& e : extra) args.push_back(std::move(e));
  call_python(name, std::move(args), /*iterator=*/true);
}

}  // namespace

void pointwise(at::TensorIteratorBase& iter, const char* name, std::vector<Arg> extra) {
  // Replays the plan recorded for an earlier call with the same key.
  plan::pointwise(iter, name, extra, [&] { pointwise_python(iter, name, extra); });
}

}  // namespace torch_ext::launch
