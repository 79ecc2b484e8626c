// A Python module over CudaDriver.cpp alone (no runtime, no ATen ops), so the
// driver can be checked on a GPU before or apart from the full extension.
#include "runtime/CudaDriver.h"

#include <torch/extension.h>

namespace torch_ext::launch::fast {
void note_driver_work() noexcept {}
}  // namespace torch_ext::launch::fast

namespace rt = torch_ext::runtime;

namespace {
rt::Driver& drv() {
  static auto d = rt::make_cuda_driver();
  TORCH_CHECK(d, "make_cuda_driver() returned nullptr (no libcuda.so.1 or no GPU)");
  return *d;
}
uintptr_t u(void* p) { return reinterpret_cast<uintptr_t>(p); }
void* p(uintptr_t v) { return reinterpret_cast<void*>(v); }
}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("available", [] { return rt::make_cuda_driver() != nullptr; });
  m.def("count", [] { return drv().deviceCount(); });
  m.def("properties", [](int d) {
    auto pr = drv().properties(d);
    return py::make_tuple(pr.name, pr.total_memory, pr.multi_processor_count, pr.major, pr.minor);
  });
  m.def("malloc", [](int d, size_t n) { return u(drv().malloc(d, n)); });
  m.def("free", [](int d, uintptr_t ptr) { drv().free(d, p(ptr)); });
  m.def("mem_info", [](int d) { return drv().memInfo(d); });
  m.def("host_malloc", [](size_t n) { return u(drv().hostMalloc(n)); });
  m.def("host_free", [](uintptr_t ptr) { drv().hostFree(p(ptr)); });
  m.def("h2d", [](uintptr_t dst, const torch::Tensor& src, uintptr_t stream, bool async) {
    drv().memcpy(p(dst), src.data_ptr(), src.nbytes(), rt::CopyKind::HostToDevice, 0, p(stream), async);
  });
  m.def("d2h", [](torch::Tensor dst, uintptr_t src, uintptr_t stream, bool async) {
    drv().memcpy(dst.data_ptr(), p(src), dst.nbytes(), rt::CopyKind::DeviceToHost, 0, p(stream), async);
  });
  m.def("d2d", [](uintptr_t dst, uintptr_t src, size_t n, uintptr_t stream) {
    drv().memcpy(p(dst), p(src), n, rt::CopyKind::DeviceToDevice, 0, p(stream), true);
  });
  m.def("memset", [](uintptr_t dst, int v, size_t n, uintptr_t stream) { drv().memset(p(dst), v, n, 0, p(stream)); });
  m.def("priority_range", [] { return drv().priorityRange(); });
  m.def("create_stream", [](int prio) { return u(drv().createStream(0, prio)); });
  m.def("destroy_stream", [](uintptr_t s) { drv().destroyStream(0, p(s)); });
  m.def("query_stream", [](uintptr_t s) { return drv().queryStream(0, p(s)); });
  m.def("sync_stream", [](uintptr_t s) { drv().synchronizeStream(0, p(s)); });
  m.def("sync_device", [] { drv().synchronizeDevice(0); });
  m.def("create_event", [](bool timing) { return u(drv().createEvent(0, timing)); });
  m.def("destroy_event", [](uintptr_t e) { drv().destroyEvent(0, p(e)); });
  m.def("record", [](uintptr_t e, uintptr_t s) { drv().recordEvent(0, p(e), p(s)); });
  m.def("wait", [](uintptr_t s, uintptr_t e) { drv().streamWaitEvent(0, p(s), p(e)); });
  m.def("query_event", [](uintptr_t e) { return drv().queryEvent(0, p(e)); });
  m.def("sync_event", [](uintptr_t e) { drv().synchronizeEvent(0, p(e)); });
  m.def("elapsed", [](uintptr_t a, uintptr_t b) { return drv().elapsedMs(0, p(a), p(b)); });
  m.def("make_current", [] { rt::make_current(drv(), 0); });
}
