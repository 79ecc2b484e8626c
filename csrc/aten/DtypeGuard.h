#pragma once
// Every generated PrivateUse1 kernel is registered through DtypeGuard: a call
// with a tensor of an element type Triton kernels cannot take (complex,
// quantized, float8, the wide unsigned types) never reaches the kernel. It goes
// to the CPU fallback instead, which runs it on the CPU or refuses it by
// TORCH_EXT_FALLBACK, with a message that names the op and the dtype.
// The check is a few compares per tensor argument; boxing happens only then.
// An op whose manifest entry has `dtypes:` (codegen/manifest.py) also gets the set
// of element types its kernels take: a call whose first tensor argument has
// another type raises NotImplementedError, as PyTorch's dispatch macros do; complex
// types in that set reach the op's kernel instead of the fallback.

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <algorithm>
#include <cstddef>
#include <optional>

namespace torch_ext::aten {

// The boxed fallback for an unsupported element type (Fallback.cpp).
void dtypeFallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

inline bool kernelTakes(c10::ScalarType t) {
  switch (t) {
    case c10::kHalf:
    case c10::kBFloat16:
    case c10::kFloat:
    case c10::kDouble:
    case c10::kChar:
    case c10::kByte:
    case c10::kShort:
    case c10::kInt:
    case c10::kLong:
    case c10::kBool:
      return true;
    default:
      return false;
  }
}

// One bit per ScalarType: the `allowed` set of a DtypeGuard.
constexpr uint64_t bit(c10::ScalarType t) { return uint64_t{1} << static_cast<int>(t); }

// Whether a tensor argument has a type neither every kernel takes nor the op's
// `allowed` set names (an op whose `dtypes:` lists complex types takes them itself).
template <uint64_t allowed>
bool unsupported(const at::Tensor& t) {
  return t.defined() && !kernelTakes(t.scalar_type()) && !(allowed & bit(t.scalar_type()));
}
template <uint64_t allowed>
bool unsupported(const std::optional<at::Tensor>& t) {
  return t && unsupported<allowed>(*t);
}
template <uint64_t allowed>
bool unsupported(at::TensorList ts) {
  return std::any_of(ts.begin(), ts.end(),
                     [](const at::Tensor& t) { return unsupported<allowed>(t); });
}
template <uint64_t allowed>
bool unsupported(const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts) {
    if (unsupported<allowed>(t)) return true;
  }
  return false;
}
template <uint64_t allowed>
bool unsupported(const c10::List<std::optional<at::Tensor>>& ts) {
  for (const std::optional<at::Tensor>& t : ts) {
    if (unsupported<allowed>(t)) return true;
  }
  return false;
}
template <uint64_t allowed, class T>
bool unsupported(const T&) {
  return false;
}

// An op name ("mul.Tensor") as a template argument.
template <std::size_t N>
struct OpName {
  char text[N];
  constexpr OpName(const char (&s)[N]) { std::copy_n(s, N, text); }
};

template <OpName name>
const c10::OperatorHandle& opHandle() {
  static const c10::OperatorHandle op = [] {
    std::string full(name.text);
    auto dot = full.find('.');
    std::string base = "aten::" + full.substr(0, dot);
    std::string overload = dot == std::string::npos ? "" : full.substr(dot + 1);
    return c10::Dispatcher::singleton().findSchemaOrThrow(base.c_str(), overload.c_str());
  }();
  return op;
}

// The first defined plain tensor argument (lists and optionals are not looked at).
inline const at::Tensor* firstTensor(const at::Tensor& t) { return t.defined() ? &t : nullptr; }
template <class T>
const at::Tensor* firstTensor(const T&) {
  return nullptr;
}

// "<op>" not implemented for '<type>': the NotImplementedError AT_DISPATCH raises.
[[noreturn]] void notImplementedFor(const char* op, c10::ScalarType t);  // Fallback.cpp

template <OpName name, auto fn, uint64_t allowed = 0, class Sig = decltype(fn)>
struct DtypeGuard;

template <OpName name, auto fn, uint64_t allowed, class Ret, class... Args>
struct DtypeGuard<name, fn, allowed, Ret (*)(Args...)> {
  static Ret call(Args... args) {
    if (C10_UNLIKELY((unsupported<allowed>(args) || ...))) {
      return c10::impl::BoxedKernelWrapper<Ret(Args...)>::call(
          c10::BoxedKernel::makeFromFunction<&dtypeFallback>(), opHandle<name>(),
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), std::forward<Args>(args)...);
    }
    if constexpr (allowed != 0) {
      const at::Tensor* first = nullptr;
      ((first = first != nullptr ? first : firstTensor(args)), ...);
      if (C10_UNLIKELY(first != nullptr && !(allowed & bit(first->scalar_type())))) {
        notImplementedFor(name.text, first->scalar_type());
      }
    }
    return fn(std::forward<Args>(args)...);
  }
};

}  // namespace torch_ext::aten
