#pragma once
// Per-device random generator: a Philox (seed, offset) pair, as CUDA's. Kernels
// take a seed and reserve `increment` counter values by advancing the offset.

#include <ATen/core/Generator.h>

#include <optional>
#include <utility>

namespace torch_ext::runtime {

const at::Generator& defaultGenerator(c10::DeviceIndex device = -1);
at::Generator newGenerator(c10::DeviceIndex device = -1);

// (seed, offset before the increment) of `gen`, or of the default generator
// of `device` when gen is empty; the offset advances by increment rounded up
// to a multiple of 4 (one Philox call yields 4 values).
std::pair<uint64_t, uint64_t> philoxSeedOffset(const std::optional<at::Generator>& gen,
                                               c10::DeviceIndex device, uint64_t increment);

}  // namespace torch_ext::runtime
