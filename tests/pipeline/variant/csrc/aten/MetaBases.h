#pragma once
// The base class named by `structured_inherits: MyMetaBase` (seed 002). As with
// TensorIteratorBase, the generated classes call the base's
// set_output_raw_strided after setting each output (generate_super), so a base
// must implement it; this one counts the outputs it was shown.
#include <ATen/TensorMeta.h>
#include <torch/version.h>

namespace TORCH_EXT_NAMESPACE {

struct MyMetaBase : public at::impl::MetaBase {
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 13
  // torch < 2.13 also takes the outputs' dimension names (the generated
  // classes call this with four arguments).
  void set_output_raw_strided(int64_t, IntArrayRef, IntArrayRef, TensorOptions,
                              DimnameList = {}) override {
#else
  void set_output_raw_strided(int64_t, IntArrayRef, IntArrayRef, TensorOptions) override {
#endif
    ++outputs_seen;
  }
  int64_t outputs_seen = 0;
  // How many times a Customized meta() ran (read by the test).
  static int64_t calls;
};

}  // namespace TORCH_EXT_NAMESPACE
