// A hand-written impl body for a LegacyMeta entry (triu.out in the manifest):
// PyTorch's meta function sizes `result`; this body launches the Triton kernel
// through the same launcher the generated bodies use.
#include "MusaFunctions_MusaTriu.h"  // its own op's declarations (gen.op_header)
#include "launch/Launcher.h"

namespace TORCH_EXT_NAMESPACE {

TORCH_IMPL_FUNC(MusaTriu)(const Tensor& self, int64_t diagonal, const Tensor& result) {
  if (self.numel() == 0) return;
  torch_ext::launch::call("triu", self, diagonal, result);
}

}  // namespace TORCH_EXT_NAMESPACE
