#include "launch/PlanKey.h"

#include <ATen/Context.h>

#include <cstring>
#include <string>
#include <type_traits>

namespace torch_ext::launch::plan {
namespace {

template <typename T>
void put(std::string& key, const T& v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// PyTorch's resolved float32 precision of CUDA's `op` (an op's own setting, else
// its backend's, else the generic one: what torch._C._get_fp32_precision_getter
// returns), as a key byte. at::Context::float32Precision takes strings in some
// torch versions and enums (Float32Backend, Float32Op) in others; its legacy
// getters (float32MatmulPrecision, allowTF32CuDNN) raise once a user mixes the
// legacy and the fp32_precision APIs, which would fail every op.
template <typename R, typename A, typename B>
int8_t fp32_precision(const at::Context& ctx, R (at::Context::*get)(A, B) const, int op_enum,
                      const char* op_name) {
  if constexpr (std::is_enum_v<R>) {
    // Float32Backend::CUDA is 1; Float32Op: ALL 0, CONV 1, RNN 2, MATMUL 3.
    return static_cast<int8_t>(
        (ctx.*get)(static_cast<std::decay_t<A>>(1), static_cast<std::decay_t<B>>(op_enum)));
  } else {
    const std::string p = (ctx.*get)("cuda", op_name);  // "ieee", "tf32", "none", ...
    return static_cast<int8_t>(p.empty() ? 0 : p[0]);
  }
}

// The global flags a kernel's Python may read.
void put_flags(std::string& key) {
  auto& ctx = at::globalContext();
  put(key, fp32_precision(ctx, &at::Context::float32Precision, 3, "matmul"));
  put(key, fp32_precision(ctx, &at::Context::float32Precision, 1, "conv"));
  put(key, ctx.deterministicAlgorithms());
  put(key, ctx.deterministicAlgorithmsWarnOnly());
}

// Which earlier operand shares this one's storage (its memory, aliased or
// overlapping) and at what byte distance: pointers into shared storage are
// resolved against one operand, so the sharing must be the same at replay.
void put_sharing(std::string& key, const std::vector<Operand>& ops, const char* data,
                 const c10::Storage& storage) {
  int16_t shared = -1;
  int64_t distance = 0;
  for (size_t j = 0; j < ops.size(); ++j) {
    if (ops[j].data && ops[j].storage.unsafeGetStorageImpl() == storage.unsafeGetStorageImpl()) {
      shared = static_cast<int16_t>(j);
      distance = data - ops[j].data;
      break;
    }
  }
  put(key, shared);
  if (shared >= 0) put(key, distance);
}

// A CPU scalar's value (numel 1); false for larger CPU tensors.
bool put_cpu(std::string& key, const at::Tensor& t) {
  if (t.numel() != 1 || !t.is_contiguous()) return false;
  put(key, 'c');
  put(key, static_cast<int8_t>(t.scalar_type()));
  put(key, static_cast<int8_t>(t.dim()));
  uint64_t bits[2] = {0, 0};
  std::memcpy(bits, t.const_data_ptr(), std::min<size_t>(sizeof(bits), t.element_size()));
  put(key, bits);
  return true;
}

struct Keyer {
  std::string& key;
  std::vector<Operand>& ops;
  c10::DeviceIndex& device;
  bool numbers = false;  // this argument's floating-point values are per-call numbers
  bool sizes = true;     // false: a shape-class key (ranks, not sizes and strides)

  bool tensor(const at::Tensor& t) {
    if (!t.defined()) {
      put(key, 'u');
      return true;
    }
    if (t.device().is_cpu()) return put_cpu(key, t);
    if (t.device().type() != c10::DeviceType::PrivateUse1 || !t.has_storage()) return false;
    if (device < 0) device = t.device().index();
    char* data = static_cast<char*>(t.storage().mutable_data()) +
                 t.storage_offset() * static_cast<int64_t>(t.element_size());
    put(key, 't');
    put(key, static_cast<int8_t>(t.device().index()));
    put(key, static_cast<int8_t>(t.scalar_type()));
    put(key, static_cast<int8_t>(t.dim()));
    if (sizes) {
      for (auto s : t.sizes()) put(key, s);
      for (auto s : t.strides()) put(key, s);
    } else {
      // What C++ and Python branch on without reading a size: empty and broadcastable
      // dimensions, contiguity.
      for (auto s : t.sizes()) put(key, static_cast<char>(s == 0 ? 'z' : s == 1 ? 'o' : 'n'));
      put(key, static_cast<char>(t.is_contiguous() ? 'c' : '-'));
      put(key, static_cast<char>(t.is_contiguous(at::MemoryFormat::ChannelsLast) ? 'l' : '-'));
    }
    put(key, static_cast<char>(reinterpret_cast<uintptr_t>(data) % 16 == 0 ? 'a' : 'u'));
    put_sharing(key, ops, data, t.storage());
    ops.push_back(Operand{data, t.storage(), t.unsafeGetTensorImpl(), t});
    return true;
  }

  // An element of a list or tuple: per-call numbers are the argument's own floats
  // and its elements', not deeper ones (Plan.cpp number_value reads those two).
  bool element(const c10::IValue& e) {
    const bool saved = numbers;
    if (e.isList() || e.isTuple() || e.isDoubleList()) numbers = false;
    const bool ok = value(e);
    numbers = saved;
    return ok;
  }

  bool value(const c10::IValue& v) {
    if (v.isTensor()) return tensor(v.toTensor());
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
      if (!numbers) put(key, v.toDouble());
    } else if (v.isComplexDouble()) {
      put(key, 'z');
      put(key, v.toComplexDouble());
    } else if (v.isString()) {
      put(key, 's');
      key.append(v.toStringRef());
      key.push_back('\0');
    } else if (v.isIntList()) {
      put(key, 'I');
      const auto list = v.toIntList();
      put(key, static_cast<int32_t>(list.size()));
      for (int64_t x : list) put(key, x);
    } else if (v.isDoubleList()) {
      put(key, 'D');
      const auto list = v.toDoubleList();
      put(key, static_cast<int32_t>(list.size()));
      if (!numbers) {
        for (double x : list) put(key, x);
      }
    } else if (v.isBoolList()) {
      put(key, 'B');
      const auto list = v.toBoolList();
      put(key, static_cast<int32_t>(list.size()));
      for (bool x : list) put(key, x);
    } else if (v.isTensorList()) {
      put(key, 'T');
      const auto list = v.toTensorList();
      put(key, static_cast<int32_t>(list.size()));
      for (const at::Tensor& t : list) {
        if (!tensor(t)) return false;
      }
    } else if (v.isList()) {  // e.g. List<optional<Tensor>> (index)
      put(key, 'L');
      const auto list = v.toListRef();
      put(key, static_cast<int32_t>(list.size()));
      for (const auto& e : list) {
        if (!element(e)) return false;
      }
    } else if (v.isTuple()) {
      put(key, 'P');
      const auto& elems = v.toTupleRef().elements();
      put(key, static_cast<int32_t>(elems.size()));
      for (const auto& e : elems) {
        if (!element(e)) return false;
      }
    } else {
      return false;
    }
    return true;
  }
};

}  // namespace

bool call_key(const char* name, const std::vector<Arg>& args, std::string& key,
              std::vector<Operand>& ops, c10::DeviceIndex& device, bool sizes, uint32_t size_mask) {
  key.reserve(256);
  if (!sizes) key.push_back('\2');  // a shape-class key
  key.append(name);
  key.push_back('\0');
  put_flags(key);
  Keyer k{key, ops, device};
  k.sizes = sizes;
  const uint32_t numbers = call_numbers(name);
  for (size_t i = 0; i < args.size(); ++i) {
    put(key, static_cast<int8_t>(args[i].kind));
    if (!sizes && i < 32 && (size_mask >> i) & 1u && args[i].value.isInt()) {
      put(key, 'i');  // a size-like integer: a variable of the shape class
      continue;
    }
    k.numbers = i < 32 && (numbers >> i) & 1u;
    if (!k.value(args[i].value)) return false;
  }
  return !ops.empty();
}

bool iterator_key(at::TensorIteratorBase& iter, const char* name, const std::vector<Arg>& extra,
                  std::string& key, std::vector<Operand>& ops, bool sizes) {
  key.reserve(256);
  key.push_back(sizes ? '\1' : '\3');  // not a call() key; a shape-class key
  key.append(name);
  key.push_back('\0');
  put_flags(key);
  const int n = iter.ntensors();
  put(key, static_cast<int8_t>(iter.device(0).index()));
  put(key, static_cast<int8_t>(n));
  put(key, static_cast<int8_t>(iter.noutputs()));
  put(key, static_cast<int8_t>(iter.ndim()));
  for (auto s : iter.shape()) {
    if (sizes) {
      put(key, s);
    } else {
      put(key, static_cast<char>(s == 0 ? 'z' : s == 1 ? 'o' : 'n'));
    }
  }
  ops.reserve(n);
  for (int i = 0; i < n; ++i) {
    put(key, static_cast<int8_t>(iter.dtype(i)));
    auto* ptr = static_cast<char*>(iter.data_ptr(i));
    if (iter.is_cpu_scalar(i)) {
      put(key, 's');
      // In a shape class an integer scalar is a variable (PlanShapes.cpp iterator_vars).
      if (sizes || !scalar_is_variable(iter.dtype(i))) {
        uint64_t bits[2] = {0, 0};
        std::memcpy(bits, ptr, std::min<size_t>(sizeof(bits), c10::elementSize(iter.dtype(i))));
        put(key, bits);
      }
      ops.push_back(Operand{});
      continue;
    }
    put(key, static_cast<char>(reinterpret_cast<uintptr_t>(ptr) % 16 == 0 ? 'a' : 'u'));
    const c10::Storage& storage = iter.tensor_base(i).storage();
    put_sharing(key, ops, ptr, storage);
    for (auto s : iter.strides(i)) {
      if (sizes) {
        put(key, s);
      } else {
        put(key, static_cast<char>(s == 0 ? '0' : '+'));  // broadcast dimensions
      }
    }
    ops.push_back(Operand{ptr, storage, nullptr, at::Tensor()});
  }
  c10::DeviceIndex unused = -1;
  std::vector<Operand> none;
  Keyer k{key, none, unused};
  for (const Arg& a : extra) {
    put(key, static_cast<int8_t>(a.kind));
    if (a.value.isTensor() || !k.value(a.value)) return false;
  }
  return true;
}

}  // namespace torch_ext::launch::plan
