// Which aten overloads ran on device tensors: a RecordFunction observer,
// switched on by the test session (tests/conftest.py) and read by
// `python -m torch_ext.coverage`. Off, it costs nothing.
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <sstream>
#include <string>

namespace torch_ext::coverage {
namespace {

std::mutex mu;
std::map<std::string, int64_t>& calls() {
  static auto* m = new std::map<std::string, int64_t>();
  return *m;
}
std::optional<at::CallbackHandle> handle;

bool on_device(const c10::IValue& v) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
  }
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) {
      if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) return true;
    }
  }
  return false;
}

std::unique_ptr<at::ObserverContext> observe(const at::RecordFunction& fn) {
  auto op = fn.operator_name();
  if (!op.has_value()) return nullptr;
  for (const auto& v : fn.inputs()) {
    if (on_device(v)) {
      std::string name = op->name + (op->overload_name.empty() ? "" : "." + op->overload_name);
      std::lock_guard<std::mutex> lock(mu);
      ++calls()[name];
      break;
    }
  }
  return nullptr;
}

void start() {
  std::lock_guard<std::mutex> lock(mu);
  if (handle.has_value()) return;
  handle = at::addGlobalCallback(
      at::RecordFunctionCallback(observe).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

// "name count" lines.
std::string report() {
  std::lock_guard<std::mutex> lock(mu);
  std::ostringstream out;
  for (const auto& [name, n] : calls()) out << name << " " << n << "\n";
  return out.str();
}

}  // namespace
}  // namespace torch_ext::coverage

TORCH_LIBRARY_FRAGMENT(torch_ext, m) {
  m.def("_coverage_start() -> ()", &torch_ext::coverage::start);
  m.def("_coverage_report() -> str", &torch_ext::coverage::report);
}
