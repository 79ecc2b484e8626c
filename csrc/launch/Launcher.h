#pragma once
// Tier-1 launcher: C++ impl bodies, stub functions and hand-written kernels
// call Triton kernels through the Python registry `torch_ext.ops.KERNELS`.
//
//   torch_ext::launch::call("mm", self, mat2, out);                   // void
//   at::Tensor y = torch_ext::launch::call<at::Tensor>("relu", self);
//   auto [a, b] = torch_ext::launch::call<std::tuple<at::Tensor, at::Tensor>>(...);
//
// The call takes the GIL itself (autograd runs backward on its own threads);
// a Python exception comes back as a c10::Error (or TypeError/ValueError/
// NotImplementedError) carrying the Python message.
//
// This header stays free of Python headers: arguments are boxed into IValues
// here and converted to Python objects in Launcher.cpp.

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/List.h>
#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>

#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

namespace torch_ext::launch {

struct Arg {
  // How to present `value` to Python; IValue stores these enums as ints.
  enum class Kind : uint8_t { Plain, Dtype, Layout, MemoryFormat };
  c10::IValue value;
  Kind kind = Kind::Plain;
};

template <typename T>
inline Arg to_arg(const T& v) {
  if constexpr (std::is_enum_v<T>) {
    return Arg{c10::IValue(static_cast<int64_t>(v))};  // e.g. GeluType: Python gets the int
  } else {
    return Arg{c10::IValue(v)};
  }
}
inline Arg to_arg(const at::Tensor& v) { return Arg{c10::IValue(v)}; }
inline Arg to_arg(const at::OptionalTensorRef& v) {
  return v.has_value() ? Arg{c10::IValue(*v)} : Arg{c10::IValue()};
}
inline Arg to_arg(uint64_t v) { return Arg{c10::IValue(static_cast<int64_t>(v))}; }
inline Arg to_arg(at::ScalarType v) {
  return Arg{c10::IValue(static_cast<int64_t>(v)), Arg::Kind::Dtype};
}
inline Arg to_arg(c10::Layout v) {
  return Arg{c10::IValue(static_cast<int64_t>(v)), Arg::Kind::Layout};
}
inline Arg to_arg(c10::MemoryFormat v) {
  return Arg{c10::IValue(static_cast<int64_t>(v)), Arg::Kind::MemoryFormat};
}
template <typename T>
inline Arg to_arg(const std::optional<T>& v) {
  if (!v.has_value()) return Arg{c10::IValue()};
  return to_arg(*v);
}
inline Arg to_arg(const c10::OptionalArrayRef<int64_t>& v) {
  return v.has_value() ? Arg{c10::IValue(v->vec())} : Arg{c10::IValue()};
}
inline Arg to_arg(at::IntArrayRef v) { return Arg{c10::IValue(v.vec())}; }
inline Arg to_arg(at::TensorList v) { return Arg{c10::IValue(v.vec())}; }
// Scalar[] (the ScalarList foreach overloads): Python gets a tuple of numbers.
inline Arg to_arg(at::ArrayRef<c10::Scalar> v) {
  std::vector<c10::IValue> elems(v.begin(), v.end());
  return Arg{c10::ivalue::Tuple::create(std::move(elems))};
}
inline Arg to_arg(c10::string_view v) { return Arg{c10::IValue(std::string(v))}; }
inline Arg to_arg(const char* v) { return Arg{c10::IValue(std::string(v))}; }
inline Arg to_arg(const c10::List<std::optional<at::Tensor>>& v) { return Arg{c10::IValue(v)}; }
inline Arg to_arg(const c10::Scalar& v) { return Arg{c10::IValue(v)}; }
// Without this, OptionalScalarRef converts to bool (has_value) through the template.
inline Arg to_arg(const at::OptionalScalarRef& v) {
  return v.has_value() ? Arg{c10::IValue(v.get())} : Arg{c10::IValue()};
}

// Calls KERNELS[name](*args) and returns what the Python function returned.
c10::IValue call_boxed(const char* name, std::vector<Arg> args);

namespace detail {
template <typename R>
struct Unbox {
  static R get(c10::IValue&& v) { return std::move(v).to<R>(); }
};
template <>
struct Unbox<void> {
  static void get(c10::IValue&&) {}
};
template <>
struct Unbox<std::vector<at::Tensor>> {
  static std::vector<at::Tensor> get(c10::IValue&& v) {
    TORCH_CHECK(v.isTuple(), "torch_ext kernel returned ", v.tagKind(),
                ", expected a list of tensors");
    std::vector<at::Tensor> out;
    for (const auto& e : v.toTupleRef().elements()) out.push_back(e.toTensor());
    return out;
  }
};
template <typename... Ts>
struct Unbox<std::tuple<Ts...>> {
  static std::tuple<Ts...> get(c10::IValue&& v) {
    TORCH_CHECK(v.isTuple(), "torch_ext kernel returned ", v.tagKind(), ", expected a tuple of ",
                sizeof...(Ts));
    auto elems = v.toTupleRef().elements();
    TORCH_CHECK(elems.size() == sizeof...(Ts), "torch_ext kernel returned ", elems.size(),
                " values, expected ", sizeof...(Ts));
    return unpack(elems, std::index_sequence_for<Ts...>{});
  }
  template <typename T>
  static T elem(const c10::IValue& v) {
    if constexpr (std::is_same_v<T, at::Tensor>) {
      if (v.isNone()) return at::Tensor();  // an output not asked for (output_mask)
    }
    return v.to<T>();
  }
  template <size_t... I>
  static std::tuple<Ts...> unpack(c10::ArrayRef<c10::IValue> e, std::index_sequence<I...>) {
    return std::tuple<Ts...>(elem<Ts>(e[I])...);
  }
};
}  // namespace detail

template <typename R = void, typename... Args>
R call(const char* name, const Args&... args) {
  std::vector<Arg> boxed;
  boxed.reserve(sizeof...(Args));
  (boxed.push_back(to_arg(args)), ...);
  return detail::Unbox<R>::get(call_boxed(name, std::move(boxed)));
}

// TensorIterator bridge for DispatchStub kernels. Calls
//   KERNELS[name](outputs, inputs, common_dtype, *extra)
// where outputs/inputs are tuples of tensors that all have the iterator's
// (coalesced) shape, with the iterator's strides, aliasing the operands'
// memory; a 0-dim CPU operand is passed as a Python number instead.
void pointwise(at::TensorIteratorBase& iter, const char* name, std::vector<Arg> extra = {});

template <typename... Extra>
void pointwise_call(at::TensorIteratorBase& iter, const char* name, const Extra&... extra) {
  std::vector<Arg> boxed;
  (boxed.push_back(to_arg(extra)), ...);
  pointwise(iter, name, std::move(boxed));
}

}  // namespace torch_ext::launch
