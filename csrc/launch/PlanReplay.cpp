// Replaying a launch plan (launch/Plan.h): temporaries from the caching allocator, the
// steps on the current stream (cuLaunchKernel without the GIL on the cuda driver; the
// recorded kernel objects through the interpreter on the host driver), the result
// rebuilt from the operands and temporaries. A size-generic plan (PlanShapes.cpp)
// carries its expressions' values at the sizes it replays for.

#include "launch/PlanImpl.h"
#include "runtime/CudaApi.h"
#include "runtime/CudaDriver.h"
#include "runtime/Driver.h"
#include "runtime/Generator.h"
#include "runtime/Stream.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>

namespace py = pybind11;

namespace torch_ext::launch {
[[noreturn]] void rethrow_python(const char* name, py::error_already_set& e);  // Launcher.cpp
}
namespace torch_ext::launch::plan::detail {
namespace {

// Whether a rate-limited callback step runs now: at most once per `interval_ns` of host
// time, over every such step of every plan (they share what they call: the bounds poll).
bool callback_due(int64_t interval_ns) {
  static std::atomic<int64_t> last{std::numeric_limits<int64_t>::min() / 2};  // due at once
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t seen = last.load(std::memory_order_relaxed);
  return now - seen >= interval_ns &&
         last.compare_exchange_strong(seen, now, std::memory_order_relaxed);
}

// A size-generic view's sizes and strides at this call (syms: the plan's expressions'
// values); a pointer-only view is one element at its place.
void geometry(const View& v, const std::vector<int64_t>* syms, std::vector<int64_t>& sizes,
              std::vector<int64_t>& strides) {
  if (v.pointer_only) {
    sizes.assign(1, 1);
    strides.assign(1, 1);
    return;
  }
  sizes = v.sizes;
  strides = v.strides;
  if (!syms) return;
  for (size_t d = 0; d < v.size_syms.size() && d < sizes.size(); ++d) {
    if (v.size_syms[d] >= 0) sizes[d] = (*syms)[v.size_syms[d]];
  }
  for (size_t d = 0; d < v.stride_syms.size() && d < strides.size(); ++d) {
    if (v.stride_syms[d] >= 0) strides[d] = (*syms)[v.stride_syms[d]];
  }
}

// The storage a view lives in at replay and its element offset there.
at::Tensor build(const View& v, const std::vector<Operand>& ops,
                 const std::vector<c10::Storage>& temps,
                 const std::vector<int64_t>* syms = nullptr) {
  std::vector<int64_t> sizes, strides;
  geometry(v, syms, sizes, strides);
  if (v.ref.index < 0) {
    return at::empty_strided(sizes, strides,
                             at::TensorOptions().dtype(v.dtype).device(
                                 c10::Device(c10::DeviceType::PrivateUse1, v.device)));
  }
  c10::Storage storage;
  const char* at_ = nullptr;
  switch (v.ref.base) {
    case Ref::Base::Temp:
      storage = temps[v.ref.index];
      at_ = static_cast<const char*>(storage.data()) + v.ref.delta;
      break;
    case Ref::Base::Operand:
      storage = ops[v.ref.index].storage;
      at_ = ops[v.ref.index].data + v.ref.delta;
      break;
    case Ref::Base::Persistent: {
      at::Tensor region = persistent_region(v.ref.index);
      storage = region.storage();
      at_ = static_cast<const char*>(region.const_data_ptr()) + v.ref.delta;
      break;
    }
  }
  const char* base = static_cast<const char*>(storage.data());
  const auto item = static_cast<int64_t>(c10::elementSize(v.dtype));
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::scalarTypeToTypeMeta(v.dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, (at_ - base) / item);
  return t;
}

c10::IValue rebuild(const Result& res, const std::vector<Operand>& ops,
                    const std::vector<c10::Storage>& temps, const std::vector<int64_t>* syms) {
  switch (res.kind) {
    case Result::Kind::Constant:
      if (syms && res.sym >= 0) return c10::IValue((*syms)[res.sym]);
      return res.constant;
    case Result::Kind::Operand:
      return c10::IValue(ops[res.operand].tensor);
    case Result::Kind::View:
      return c10::IValue(build(res.view, ops, temps, syms));
    case Result::Kind::Tuple: {
      std::vector<c10::IValue> elems;
      elems.reserve(res.elems.size());
      for (const auto& e : res.elems) elems.push_back(rebuild(e, ops, temps, syms));
      return c10::ivalue::Tuple::create(std::move(elems));
    }
  }
  return c10::IValue();
}

py::object& host_replay_fn() {
  static auto* fn =
      new py::object(py::module_::import("torch_ext.ops._launch").attr("replay_recorded"));
  return *fn;
}

}  // namespace

c10::IValue replay(const Plan& plan, const std::vector<Operand>& ops, c10::DeviceIndex device,
                   const std::vector<Arg>* args) {
  runtime::Driver& drv = runtime::driver();
  // The per-call numbers, from this call's arguments (the key has their types).
  std::vector<double> numbers(plan.numbers.size());
  for (size_t k = 0; k < plan.numbers.size(); ++k) {
    TORCH_CHECK(args && number_value(*args, plan.numbers[k], numbers[k]),
                "torch_ext: a launch plan's per-call number is missing from the call");
  }
  // A size-generic plan's expressions at the sizes it replays for (computed when it was
  // cached under this key).
  const std::vector<int64_t>& sym_values = plan.values;
  const std::vector<int64_t>* syms = plan.symbolic ? &plan.values : nullptr;
  std::vector<c10::Storage> temps;
  temps.reserve(plan.temps.size());
  if (!plan.temps.empty()) {
    c10::Allocator* alloc = c10::GetAllocator(c10::DeviceType::PrivateUse1);
    for (size_t j = 0; j < plan.temps.size(); ++j) {
      size_t bytes = plan.temps[j];
      if (syms && plan.temp_syms[j] >= 0)
        bytes = static_cast<size_t>(sym_values[plan.temp_syms[j]]);
      temps.emplace_back(c10::Storage::use_byte_size_t(), bytes, alloc->allocate(bytes), alloc,
                         /*resizable=*/true);
    }
  }
  auto addr = [&](const Ref& r) -> char* {
    switch (r.base) {
      case Ref::Base::Temp:
        return static_cast<char*>(temps[r.index].mutable_data()) + r.delta;
      case Ref::Base::Operand:
        return ops[r.index].data + r.delta;
      case Ref::Base::Persistent:
        return static_cast<char*>(persistent_region(r.index).mutable_data_ptr()) + r.delta;
    }
    return nullptr;
  };
  // The replaying thread may be new to the device (the autograd engine's device
  // thread runs backward ops): cuLaunchKernel needs the device's context current.
  if (is_cuda()) runtime::make_current(drv, device);
  auto stream = runtime::driverStream(runtime::getCurrentStream(device));
  const bool profiling = at::hasCallbacks();
  std::vector<std::pair<uint64_t, uint64_t>> philox;
  for (const Step& s : plan.steps) {
    std::optional<at::RecordFunction> range;
    if (profiling && !s.name.empty()) {
      range.emplace(at::RecordScope::USER_SCOPE);
      if (range->isActive()) range->before(s.name.c_str());
    }
    switch (s.kind) {
      case Step::Kind::Cuda: {
        uint64_t values[kMaxParams];
        void* pointers[kMaxParams];
        for (size_t k = 0; k < s.params.size(); ++k) {
          const Param& p = s.params[k];
          values[k] = p.is_ref ? reinterpret_cast<uint64_t>(addr(p.ref)) : p.bits;
          if (p.philox >= 0) {
            const auto& draw = philox[p.ordinal];
            values[k] = p.philox == 0 ? draw.first : draw.second;
          } else if (p.number >= 0) {
            const double d = numbers[p.number];
            if (p.size == 4) {
              const float f = static_cast<float>(d);
              values[k] = 0;
              std::memcpy(&values[k], &f, sizeof(f));
            } else {
              std::memcpy(&values[k], &d, sizeof(d));
            }
          }
          if (p.sym >= 0 && syms) {  // little-endian: the low `size` bytes
            const int64_t v = sym_values[p.sym];
            std::memcpy(&values[k], &v, sizeof(v));
          }
          pointers[k] = &values[k];
        }
        unsigned grid[3] = {s.grid[0], s.grid[1], s.grid[2]};
        for (int d = 0; d < 3; ++d) {
          if (s.grid_syms[d] >= 0 && syms)
            grid[d] = static_cast<unsigned>(sym_values[s.grid_syms[d]]);
        }
        at::Tensor scratch;  // freed after the launch: later work on the stream reuses it
        if (s.scratch) {
          const int64_t programs = int64_t{grid[0]} * grid[1] * grid[2];
          scratch = at::empty({programs * s.scratch},
                              at::TensorOptions().dtype(at::kByte).device(
                                  c10::Device(c10::DeviceType::PrivateUse1, device)));
          values[s.scratch_param] = reinterpret_cast<uint64_t>(scratch.data_ptr());
        }
        const auto& a = *cuda::api();
        TORCH_EXT_CUDA_CHECK(a.cuLaunchKernel(
            static_cast<cuda::CUfunction>(s.function), grid[0], grid[1], grid[2], s.threads, 1, 1,
            s.shared, static_cast<cuda::CUstream>(stream), pointers, nullptr));
        break;
      }
      case Step::Kind::Host: {
        py::gil_scoped_acquire gil;
        try {
          py::list tensors(s.tensors.size());
          for (size_t k = 0; k < s.tensors.size(); ++k) {
            tensors[k] = py::reinterpret_steal<py::object>(
                THPVariable_Wrap(build(s.tensors[k], ops, temps)));
          }
          host_replay_fn()(py::handle(s.kernel->p), py::handle(s.py_grid->p), py::handle(s.args->p),
                           py::handle(s.kwargs->p), tensors, py::cast(philox), py::cast(numbers),
                           py::cast(sym_values));
        } catch (py::error_already_set& e) {
          rethrow_python(s.name.c_str(), e);
        }
        break;
      }
      case Step::Kind::Callback: {
        if (s.interval_ns > 0 && !callback_due(s.interval_ns)) break;
        py::gil_scoped_acquire gil;
        try {
          py::handle(s.kernel->p)(*py::reinterpret_borrow<py::tuple>(s.args->p));
        } catch (py::error_already_set& e) {
          rethrow_python(s.name.c_str(), e);
        }
        break;
      }
      case Step::Kind::Philox:
        philox.push_back(runtime::philoxSeedOffset(std::nullopt, s.device, s.bytes));
        break;
      case Step::Kind::Copy:
        drv.memcpy(addr(s.dst), addr(s.src), s.bytes, runtime::CopyKind::DeviceToDevice, device,
                   stream, /*async=*/true);
        break;
      case Step::Kind::Memset:
        drv.memset(addr(s.dst), s.value, s.bytes, device, stream);
        break;
    }
  }
  return rebuild(plan.result, ops, temps, syms);
}

}  // namespace torch_ext::launch::plan::detail
