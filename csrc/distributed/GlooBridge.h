// torch.distributed on privateuseone: a c10d backend over an inner gloo one.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

namespace torch_ext::distributed {

class GlooBridge final : public c10d::Backend {
 public:
  GlooBridge(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size);

  const std::string getBackendName() const override { return "torch_ext"; }
  c10::intrusive_ptr<c10d::Backend> gloo() const { return gloo_; }

  using WorkPtr = c10::intrusive_ptr<c10d::Work>;
  using TensorList = std::vector<at::Tensor>;
  WorkPtr broadcast(TensorList& tensors, const c10d::BroadcastOptions& opts) override;
  WorkPtr allreduce(TensorList& tensors, const c10d::AllreduceOptions& opts) override;
  WorkPtr allreduce_coalesced(TensorList& tensors,
                              const c10d::AllreduceCoalescedOptions& opts) override;
  WorkPtr reduce(TensorList& tensors, const c10d::ReduceOptions& opts) override;
  WorkPtr allgather(std::vector<TensorList>& outputs, TensorList& inputs,
                    const c10d::AllgatherOptions& opts) override;
  WorkPtr _allgather_base(at::Tensor& output, at::Tensor& input,
                          const c10d::AllgatherOptions& opts) override;
  WorkPtr allgather_coalesced(std::vector<TensorList>& outputs, TensorList& inputs,
                              const c10d::AllgatherOptions& opts) override;
  WorkPtr allgather_into_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                          const c10d::AllgatherOptions& opts) override;
  WorkPtr gather(std::vector<TensorList>& outputs, TensorList& inputs,
                 const c10d::GatherOptions& opts) override;
  WorkPtr scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                  const c10d::ScatterOptions& opts) override;
  WorkPtr reduce_scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                         const c10d::ReduceScatterOptions& opts) override;
  WorkPtr _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                               const c10d::ReduceScatterOptions& opts) override;
  WorkPtr reduce_scatter_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                          const c10d::ReduceScatterOptions& opts) override;
  WorkPtr alltoall_base(at::Tensor& output, at::Tensor& input,
                        std::vector<int64_t>& outputSplitSizes,
                        std::vector<int64_t>& inputSplitSizes,
                        const c10d::AllToAllOptions& opts) override;
  WorkPtr alltoall(TensorList& outputs, TensorList& inputs,
                   const c10d::AllToAllOptions& opts) override;
  WorkPtr send(TensorList& tensors, int dstRank, int tag) override;
  WorkPtr recv(TensorList& tensors, int srcRank, int tag) override;
  WorkPtr recvAnysource(TensorList& tensors, int tag) override;
  WorkPtr barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  void setTimeout(std::chrono::milliseconds timeout) override;

 private:
  c10::intrusive_ptr<c10d::Backend> gloo_;
};

}  // namespace torch_ext::distributed
