#pragma once
// The slice of the CUDA driver API (libcuda.so.1) that the cuda driver and the
// fast launcher use, resolved with dlopen/dlsym at run time so that building
// needs no CUDA toolkit. Types and constants are declared here with the values
// of cuda.h; only what is used is declared.

#include <cstddef>
#include <string>
#include <type_traits>

namespace torch_ext::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;

constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;

// One entry per function: X(member, exported symbol, function type).
#define TORCH_EXT_CUDA_FUNCTIONS(X)                                                               \
  X(cuInit, "cuInit", CUresult(unsigned))                                                         \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char**))                       \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char**))                           \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int*))                                         \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice*, int))                                         \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char*, int, CUdevice))                           \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult(size_t*, CUdevice))                         \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", CUresult(int*, int, CUdevice))                  \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult(CUcontext*, CUdevice))         \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                                      \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult(CUcontext*))                                     \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                                             \
  X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", CUresult(int*, int*))             \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr*, size_t))                                  \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                                             \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult(size_t*, size_t*))                                  \
  X(cuMemHostAlloc, "cuMemHostAlloc", CUresult(void**, size_t, unsigned))                         \
  X(cuMemFreeHost, "cuMemFreeHost", CUresult(void*))                                              \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                                    \
    CUresult(CUdeviceptr, const void*, size_t, CUstream))                                         \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult(void*, CUdeviceptr, size_t, CUstream))    \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                                    \
    CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))                                         \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync",                                                       \
    CUresult(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))                   \
  X(cuMemsetD8Async, "cuMemsetD8Async", CUresult(CUdeviceptr, unsigned char, size_t, CUstream))   \
  X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", CUresult(CUstream*, unsigned, int)) \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                                    \
  X(cuStreamQuery, "cuStreamQuery", CUresult(CUstream))                                           \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))                               \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", CUresult(CUstream, CUevent, unsigned))                \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent*, unsigned))                                 \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                                       \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))                                  \
  X(cuEventQuery, "cuEventQuery", CUresult(CUevent))                                              \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))                                  \
  X(cuEventElapsedTime, "cuEventElapsedTime", CUresult(float*, CUevent, CUevent))                 \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult(CUmodule*, const void*))                       \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult(CUfunction*, CUmodule, const char*))     \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", CUresult(CUfunction, int, int))                     \
  X(cuLaunchKernel, "cuLaunchKernel",                                                             \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,    \
             CUstream, void**, void**))

struct Api {
#define TORCH_EXT_CUDA_MEMBER(name, symbol, type) std::add_pointer_t<type> name = nullptr;
  TORCH_EXT_CUDA_FUNCTIONS(TORCH_EXT_CUDA_MEMBER)
#undef TORCH_EXT_CUDA_MEMBER
  // Optional (CUDA 12.4+); nullptr on older drivers.
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t*, size_t*) = nullptr;
};

// The loaded API, or nullptr when libcuda.so.1 (or one of the symbols above)
// is missing or cuInit fails. Loaded once; never throws.
const Api* api() noexcept;

// "cuMemAlloc_v2 failed: out of memory (CUDA_ERROR_OUT_OF_MEMORY)".
std::string describe(CUresult result, const char* what);

}  // namespace torch_ext::cuda

// Checks a CUDA driver call; raises a c10::Error naming the call and the error.
#define TORCH_EXT_CUDA_CHECK(call)                                           \
  do {                                                                       \
    ::torch_ext::cuda::CUresult torch_ext_cuda_result_ = (call);             \
    TORCH_CHECK(torch_ext_cuda_result_ == ::torch_ext::cuda::CUDA_SUCCESS,   \
                ::torch_ext::cuda::describe(torch_ext_cuda_result_, #call)); \
  } while (0)
