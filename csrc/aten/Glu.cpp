// A hand-written impl body for glu.out (LegacyMeta in the manifest). PyTorch's
// meta sizes `out` and builds its TensorIterator over two halves of `self` that
// are temporaries of the meta function: the iterator's operands dangle by the
// time the impl runs, so the generated iterator call cannot be used. The kernel
// gets `self` and `dim` and splits the halves itself.
// Its own op's declarations only (codegen/gen.py op_header): an unrelated manifest
// change does not recompile this file.
#include "MusaFunctions_TritonGlu.h"
#include "launch/Launcher.h"

namespace TORCH_EXT_NAMESPACE {

TORCH_IMPL_FUNC(TritonGlu)(const Tensor& self, int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  torch_ext::launch::call("glu_out", self, dim, out);
}

}  // namespace TORCH_EXT_NAMESPACE
