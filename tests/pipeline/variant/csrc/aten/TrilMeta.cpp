// Customized mode for tril (seed 002): our own meta function, in the backend
// namespace, handing a precomputed value to the impl.
#include <ATen/TensorMeta.h>
#include <torch/library.h>

#include "MusaFunctions.h"

namespace TORCH_EXT_NAMESPACE {

int64_t MyMetaBase::calls = 0;

TORCH_PRECOMPUTE_META_FUNC(tril)(const Tensor& self, int64_t diagonal) {
  TORCH_CHECK(self.dim() >= 2,
              "torch_ext tril (Customized meta): expected a matrix or a batch of "
              "matrices, got a ",
              self.dim(), "-D tensor");
  ++calls;
  set_output_raw_strided(0, self.sizes(), {}, self.options());
  TORCH_INTERNAL_ASSERT(outputs_seen == 1, "the generated class did not call MyMetaBase");
  return TORCH_PRECOMPUTE_STRUCT(tril)().set_var(diagonal);
}

}  // namespace TORCH_EXT_NAMESPACE

// How many times the Customized meta ran (read by the test).
TORCH_LIBRARY_FRAGMENT(torch_ext_variant, m) {
  m.def("tril_meta_calls() -> int",
        []() -> int64_t { return TORCH_EXT_NAMESPACE::MyMetaBase::calls; });
}
