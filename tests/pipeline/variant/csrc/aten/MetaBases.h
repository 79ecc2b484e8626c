#pragma once
// The base class named by `structured_inherits: MyMetaBase` (seed 002).
#include <ATen/TensorMeta.h>

namespace at::musa {

struct MyMetaBase : public at::impl::MetaBase {
  // Counts meta() calls, so a test can tell that our meta class ran.
  static int64_t calls;
};

}  // namespace at::musa
