// The boxed fallback for PrivateUse1: an op without a device kernel runs on
// the CPU (device inputs copied to the host, results copied back), depending
// on TORCH_EXT_FALLBACK=warn (default: warn once per op) | silent | error.
// Views, factories and random ops are refused whatever the mode: a view run on
// a copy would not alias, a factory has no device input to follow, and random
// ops must draw from the device generator. Inputs on two devices (or a CPU
// tensor that is not a 0-dim scalar) are refused too, naming both devices.
#include "aten/Fallback.h"
#include "aten/DtypeGuard.h"
#include "runtime/Config.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <ATen/ops/_to_copy.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

namespace torch_ext::aten {
namespace {

std::atomic<FallbackMode> mode{parseFallbackMode(config::fallback())};
std::mutex stats_mutex;
std::map<std::string, int64_t> stats;
std::set<std::string> warned;

std::string op_name(const c10::FunctionSchema& schema) {
  const auto& n = schema.operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

bool is_random(const c10::FunctionSchema& schema) {
  for (const auto& arg : schema.arguments()) {
    if (arg.type()->str().find("Generator") != std::string::npos) return true;
  }
  const std::string& name = schema.operator_name().name;
  for (const char* word : {"dropout", "bernoulli", "multinomial", "poisson", "rrelu", "rand"}) {
    if (name.find(word) != std::string::npos) return true;
  }
  return false;
}

bool returns_view(const c10::FunctionSchema& schema) {
  for (const auto& ret : schema.returns()) {
    if (ret.alias_info() && !ret.alias_info()->isWrite()) return true;
  }
  return false;
}

template <typename F>
void for_each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) f(t);
  } else if (v.isOptionalTensorList()) {
    for (const auto& t : v.toOptionalTensorList()) {
      std::optional<at::Tensor> o = t;
      if (o.has_value()) f(*o);
    }
  }
}

// The device the op's device tensors live on; throws on mixed devices.
std::optional<c10::Device> common_device(const std::string& name, c10::ArrayRef<c10::IValue> args) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> other;
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      if (t.is_privateuseone()) {
        TORCH_CHECK(
            !device || *device == t.device(),
            "Expected all tensors to be on the same device, but found at least two devices, ",
            *device, " and ", t.device(), "! (when checking arguments for ", name, ")");
        device = t.device();
      } else if (!(t.is_cpu() && t.dim() == 0)) {
        other = t.device();
      }
    });
  }
  if (device && other) {
    TORCH_CHECK(false,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                *device, " and ", *other, "! (when checking arguments for ", name, ")");
  }
  return device;
}

at::Tensor to_host(const at::Tensor& t) {
  return t.defined() && t.is_privateuseone() ? t.to(at::kCPU) : t;
}

c10::IValue to_host(const c10::IValue& v) {
  if (v.isTensor()) return to_host(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(to_host(t));
    return out;
  }
  if (v.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> out;
    for (const auto& t : v.toOptionalTensorList()) {
      std::optional<at::Tensor> o = t;
      out.push_back(o.has_value() ? std::optional<at::Tensor>(to_host(*o)) : std::nullopt);
    }
    return out;
  }
  if (v.isDevice() && v.toDevice().is_privateuseone()) return c10::Device(at::kCPU);
  return v;
}

c10::IValue to_device(const c10::IValue& v, c10::Device device) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    return t.defined() ? t.to(device) : t;
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(t.to(device));
    return out;
  }
  return v;
}

// Copies the host result of a mutated argument back into the device tensor.
void write_back(const at::Tensor& device_tensor, const at::Tensor& host) {
  if (!device_tensor.defined() || !device_tensor.is_privateuseone()) return;
  if (!device_tensor.sizes().equals(host.sizes())) device_tensor.resize_(host.sizes());
  device_tensor.copy_(host);
}

// `why` says what is missing natively ("has no privateuseone kernel", or the dtypes).
void warn_or_refuse(const std::string& name, const std::string& why) {
  auto m = mode.load();
  TORCH_CHECK_NOT_IMPLEMENTED(
      m != FallbackMode::Error, name, " ", why,
      ", and the CPU fallback is off (TORCH_EXT_FALLBACK=error); set TORCH_EXT_FALLBACK=warn "
      "or silent (or torch_ext.fallback_mode(\"warn\")) to run it on the CPU");
  std::lock_guard<std::mutex> lock(stats_mutex);
  stats[name]++;
  if (m == FallbackMode::Warn && warned.insert(name).second) {
    TORCH_WARN(name, " ", why, "; running it on the CPU (inputs and results are copied)");
  }
}

// The element types of the op's tensor arguments that no kernel takes, as "complex64, qint8".
std::string unsupported_dtypes(c10::ArrayRef<c10::IValue> args) {
  std::set<std::string> names;
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& t) {
      if (unsupported<0>(t))
        names.insert("torch." + std::string(c10::getDtypeNames(t.scalar_type()).first));
    });
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack, const std::string& why) {
  const auto& schema = op.schema();
  const std::string name = op_name(schema);
  const size_t num_args = schema.arguments().size();
  auto args = torch::jit::last(*stack, num_args);

  auto device = common_device(name, args);
  TORCH_CHECK_NOT_IMPLEMENTED(device.has_value(), name, " ", why,
                              ", and as a factory (no device tensor input) it cannot run through "
                              "the CPU fallback");
  TORCH_CHECK_NOT_IMPLEMENTED(
      !returns_view(schema), name, " ", why,
      ", and as a view it cannot run through the CPU fallback (the result would not alias)");
  TORCH_CHECK_NOT_IMPLEMENTED(!is_random(schema), name, " ", why,
                              ", and as a random op it cannot run through the CPU fallback (it "
                              "must use the device generator)");
  warn_or_refuse(name, why);

  std::vector<c10::IValue> originals(args.begin(), args.end());
  std::vector<c10::IValue> host_args;
  host_args.reserve(num_args);
  for (const auto& a : originals) host_args.push_back(to_host(a));
  torch::jit::drop(*stack, num_args);
  for (const auto& a : host_args) torch::jit::push(*stack, a);

  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  // Mutated arguments: copy the host results back.
  for (size_t i = 0; i < num_args; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (!alias || !alias->isWrite()) continue;
    if (originals[i].isTensor()) {
      write_back(originals[i].toTensor(), host_args[i].toTensor());
    } else if (originals[i].isTensorList()) {
      auto dev = originals[i].toTensorVector();
      auto host = host_args[i].toTensorVector();
      for (size_t k = 0; k < dev.size(); ++k) write_back(dev[k], host[k]);
    }
  }

  // Results: a return aliasing a mutated argument is that device argument;
  // anything else is moved to the device.
  const size_t num_returns = schema.returns().size();
  auto returns = torch::jit::last(*stack, num_returns);
  std::vector<c10::IValue> results;
  for (size_t r = 0; r < num_returns; ++r) {
    const auto* ret_alias = schema.returns()[r].alias_info();
    std::optional<c10::IValue> aliased;
    if (ret_alias && ret_alias->isWrite()) {
      for (size_t i = 0; i < num_args; ++i) {
        const auto* a = schema.arguments()[i].alias_info();
        if (a && a->beforeSets() == ret_alias->beforeSets()) aliased = originals[i];
      }
    }
    results.push_back(aliased ? *aliased : to_device(returns[r], *device));
  }
  torch::jit::drop(*stack, num_returns);
  for (auto& r : results) torch::jit::push(*stack, std::move(r));
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_on_cpu(op, stack, "has no privateuseone kernel");
}

}  // namespace

void dtypeFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  auto args = torch::jit::last(*stack, op.schema().arguments().size());
  run_on_cpu(op, stack,
             "has no privateuseone kernel for dtype " + unsupported_dtypes(args) +
                 " (Triton kernels take float16, bfloat16, float32, float64, int8, uint8, int16, "
                 "int32, int64 and bool)");
}

void notImplementedFor(const char* op, c10::ScalarType t) {
  std::string name(op);
  TORCH_CHECK_NOT_IMPLEMENTED(false, "\"", name.substr(0, name.find('.')),
                              "\" not implemented for '", c10::toString(t), "'");
}

FallbackMode parseFallbackMode(const std::string& text) {
  if (text == "warn") return FallbackMode::Warn;
  if (text == "silent") return FallbackMode::Silent;
  if (text == "error") return FallbackMode::Error;
  TORCH_CHECK(false, "TORCH_EXT_FALLBACK must be warn, silent or error, got '", text, "'");
}

const char* fallbackModeName(FallbackMode m) {
  switch (m) {
    case FallbackMode::Warn:
      return "warn";
    case FallbackMode::Silent:
      return "silent";
    case FallbackMode::Error:
      return "error";
  }
  return "?";
}

FallbackMode fallbackMode() { return mode.load(); }
void setFallbackMode(FallbackMode m) { mode.store(m); }

std::map<std::string, int64_t> fallbackStats() {
  std::lock_guard<std::mutex> lock(stats_mutex);
  return stats;
}

void resetFallbackStats() {
  std::lock_guard<std::mutex> lock(stats_mutex);
  stats.clear();
  warned.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace torch_ext::aten
