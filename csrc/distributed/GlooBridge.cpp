// torch.distributed on privateuseone: a c10d::Backend that runs every
// collective through an inner ProcessGroupGloo (created in Python, handed in
// as a c10d::Backend, so no gloo header is needed here).
//
// Each privateuseone tensor is given to gloo as a CPU tensor:
//  - zero-copy where the driver's memory is host memory (host driver, no
//    memory protection) and the tensor is dense and contiguous: a CPU tensor
//    over the same storage;
//  - staged otherwise (cuda driver, TORCH_EXT_HOST_PROTECT, non-contiguous):
//    a device->host copy on the caller's current stream before gloo, and a
//    host->device copy of the outputs when gloo finishes.
// Reductions gloo lacks are done on those CPU tensors: AVG is SUM then a
// division, PREMUL_SUM multiplies a staged copy of the inputs first.
// The Work that is returned keeps every tensor alive until the collective and
// its copies are done; its future holds the device tensors and completes on
// the device (waiters' streams wait on an event recorded after the copies).
#include "distributed/GlooBridge.h"

#include "runtime/Driver.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/DeviceGuard.h>

#include <mutex>

namespace torch_ext::distributed {
namespace {

using c10d::Work;
using WorkPtr = c10::intrusive_ptr<Work>;
using TensorList = std::vector<at::Tensor>;

// One device tensor as gloo sees it.
struct Mapped {
  at::Tensor device;  // undefined for a CPU tensor passed through
  at::Tensor host;
  bool staged = false;
  bool output = false;
};

// What one collective needs after gloo: post-processing on the host tensors,
// copies back to the device, then a future of the device outputs.
class BridgeWork final : public Work {
 public:
  BridgeWork(WorkPtr inner, std::vector<Mapped> mapped, TensorList results, std::string op,
             int rank, int size, std::function<void()> post)
      : Work(rank),
        inner_(std::move(inner)),
        mapped_(std::move(mapped)),
        results_(std::move(results)),
        op_(std::move(op)),
        size_(size),
        post_(std::move(post)) {}

  // After construction (the callback holds a reference to this Work).
  void start() {
    std::vector<c10::Device> devices;
    for (const auto& m : mapped_) {
      if (m.device.defined() && devices.empty()) devices.push_back(m.device.device());
    }
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()), devices);
    c10::intrusive_ptr<c10::ivalue::Future> inner_future;
    try {
      inner_future = inner_->getFuture();
    } catch (const std::exception&) {
      inner_future.reset();  // gloo's send/recv have no future: finished in wait()
    }
    if (inner_future) {
      chained_ = true;
      auto self = c10::intrusive_ptr<BridgeWork>::reclaim_copy(this);
      inner_future->addCallback([self](c10::ivalue::Future& f) {
        if (f.hasError()) {
          self->fail(f.exception_ptr());
        } else {
          self->finish();
        }
      });
    }
  }

  bool isCompleted() override { return chained_ ? future_->completed() : inner_->isCompleted(); }
  bool isSuccess() const override { return !future_->hasError() && inner_->isSuccess(); }
  std::exception_ptr exception() const override {
    return future_->hasError() ? future_->exception_ptr() : inner_->exception();
  }
  int sourceRank() const override { return inner_->sourceRank(); }
  TensorList result() override { return results_; }
  void synchronize() override {}

  bool wait(std::chrono::milliseconds timeout) override {
    try {
      inner_->wait(timeout);
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "torch_ext distributed: ", op_, " failed on rank ", rank_, " of ", size_,
                  ": ", e.what());
    }
    if (!chained_) finish();
    future_->wait();  // the current stream waits for the copies back
    if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
    return true;
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  void finish() {
    std::call_once(once_, [this] {
      try {
        if (post_) post_();
        for (auto& m : mapped_) {
          if (m.staged && m.output) {
            c10::DeviceGuard guard(m.device.device());
            m.device.copy_(m.host);
          }
        }
        future_->markCompleted(c10::IValue(results_));
      } catch (...) {
        future_->setError(std::current_exception());
      }
      mapped_.clear();  // staging memory goes; results_ keep the outputs
    });
  }
  void fail(std::exception_ptr e) {
    std::call_once(once_, [&] {
      std::string what = "unknown error";
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        what = ex.what();
      } catch (...) {
      }
      future_->setError(std::make_exception_ptr(std::runtime_error(c10::str(
          "torch_ext distributed: ", op_, " failed on rank ", rank_, " of ", size_, ": ", what))));
      mapped_.clear();
    });
  }

  WorkPtr inner_;
  std::vector<Mapped> mapped_;
  TensorList results_;
  std::string op_;
  int size_;
  std::function<void()> post_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool chained_ = false;
  std::once_flag once_;
};

// Collects the tensors of one call, checks that they share one device, and
// hands gloo their host views.
class Call {
 public:
  Call(std::string op, bool force_stage) : op_(std::move(op)), force_stage_(force_stage) {}

  at::Tensor map(const at::Tensor& t, bool input, bool output) {
    if (!t.defined() || !t.is_privateuseone()) return t;
    if (!device_) {
      device_ = t.device();
    } else {
      TORCH_CHECK(*device_ == t.device(), "torch_ext distributed: ", op_, " got tensors on ",
                  *device_, " and ", t.device(), "; one collective takes tensors of one device");
    }
    Mapped m;
    m.device = t;
    m.output = output;
    bool alias = !force_stage_ && runtime::driver().hostAddressable() && t.is_contiguous() &&
                 t.is_non_overlapping_and_dense();
    if (alias) {
      c10::Storage storage = t.storage();
      m.host = at::for_blob(storage.mutable_data(), t.sizes())
                   .strides(t.strides())
                   .storage_offset(t.storage_offset())
                   .context(new c10::Storage(storage),
                            [](void* ctx) { delete static_cast<c10::Storage*>(ctx); })
                   .options(t.options().device(at::kCPU))
                   .target_device(c10::Device(at::kCPU))
                   .make_tensor();
    } else {
      m.staged = true;
      m.host = at::empty(t.sizes(), t.options().device(at::kCPU));
      if (input) m.host.copy_(t);  // on the current stream; waits for it
    }
    mapped_.push_back(m);
    return m.host;
  }
  TensorList map(const TensorList& ts, bool input, bool output) {
    TensorList out;
    out.reserve(ts.size());
    for (const auto& t : ts) out.push_back(map(t, input, output));
    return out;
  }
  std::vector<TensorList> map(const std::vector<TensorList>& ts, bool input, bool output) {
    std::vector<TensorList> out;
    for (const auto& l : ts) out.push_back(map(l, input, output));
    return out;
  }

  // Nothing on the device: gloo's own Work is the answer.
  WorkPtr done(WorkPtr inner, TensorList results, int rank, int size,
               std::function<void()> post = {}) {
    if (mapped_.empty() && !post) return inner;
    auto work = c10::make_intrusive<BridgeWork>(
        std::move(inner), std::move(mapped_), std::move(results), op_, rank, size, std::move(post));
    work->start();
    return work;
  }

 private:
  std::string op_;
  bool force_stage_;
  std::optional<c10::Device> device_;
  std::vector<Mapped> mapped_;
};

// A reduction gloo can run, and what to do around it.
struct Reduction {
  c10d::ReduceOp op;
  bool average = false;
  bool premul = false;
  at::Tensor factor_tensor;
  double factor = 1.0;
};

Reduction reduction(const c10d::ReduceOp& op) {
  Reduction r{op};
  if (op.op_ == c10d::ReduceOp::AVG) {
    r.op = c10d::ReduceOp(c10d::ReduceOp::SUM);
    r.average = true;
  } else if (op.op_ == c10d::ReduceOp::PREMUL_SUM) {
    r.op = c10d::ReduceOp(c10d::ReduceOp::SUM);
    r.premul = true;
    // NCCLPreMulSumSupplement: the name torch 2.11 has (2.13 keeps it as an alias).
    auto* sup = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK(sup, "torch_ext distributed: PREMUL_SUM without a factor");
    if (sup->tensor_factor.defined()) {
      r.factor_tensor = sup->tensor_factor.to(at::kCPU);
    } else {
      r.factor = sup->double_factor;
    }
  }
  return r;
}

void premultiply(const Reduction& r, const TensorList& hosts) {
  if (!r.premul) return;
  for (const auto& h : hosts) {
    if (r.factor_tensor.defined()) {
      h.mul_(r.factor_tensor);
    } else {
      h.mul_(r.factor);
    }
  }
}

std::function<void()> averager(const Reduction& r, TensorList hosts, int size) {
  if (!r.average) return {};
  return [hosts = std::move(hosts), size] {
    for (const auto& h : hosts) {
      if (at::isIntegralType(h.scalar_type(), /*includeBool=*/true)) {
        h.div_(size, "trunc");
      } else {
        h.div_(size);
      }
    }
  };
}

}  // namespace

GlooBridge::GlooBridge(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size)
    : c10d::Backend(rank, size), gloo_(std::move(gloo)) {}

#define TE_RANK getRank(), getSize()

WorkPtr GlooBridge::broadcast(TensorList& tensors, const c10d::BroadcastOptions& opts) {
  Call call("broadcast", false);
  auto hosts = call.map(tensors, true, true);
  return call.done(gloo_->broadcast(hosts, opts), tensors, TE_RANK);
}

WorkPtr GlooBridge::allreduce(TensorList& tensors, const c10d::AllreduceOptions& opts) {
  auto r = reduction(opts.reduceOp);
  Call call("allreduce", r.premul);
  auto hosts = call.map(tensors, true, true);
  premultiply(r, hosts);
  auto o = opts;
  o.reduceOp = r.op;
  return call.done(gloo_->allreduce(hosts, o), tensors, TE_RANK, averager(r, hosts, getSize()));
}

WorkPtr GlooBridge::allreduce_coalesced(TensorList& tensors,
                                        const c10d::AllreduceCoalescedOptions& opts) {
  auto r = reduction(opts.reduceOp);
  Call call("allreduce_coalesced", r.premul);
  auto hosts = call.map(tensors, true, true);
  premultiply(r, hosts);
  auto o = opts;
  o.reduceOp = r.op;
  return call.done(gloo_->allreduce_coalesced(hosts, o), tensors, TE_RANK,
                   averager(r, hosts, getSize()));
}

WorkPtr GlooBridge::reduce(TensorList& tensors, const c10d::ReduceOptions& opts) {
  auto r = reduction(opts.reduceOp);
  Call call("reduce", r.premul);
  auto hosts = call.map(tensors, true, true);
  premultiply(r, hosts);
  auto o = opts;
  o.reduceOp = r.op;
  return call.done(gloo_->reduce(hosts, o), tensors, TE_RANK, averager(r, hosts, getSize()));
}

WorkPtr GlooBridge::allgather(std::vector<TensorList>& outputs, TensorList& inputs,
                              const c10d::AllgatherOptions& opts) {
  Call call("allgather", false);
  auto in = call.map(inputs, true, false);
  auto out = call.map(outputs, false, true);
  TensorList results;
  for (auto& l : outputs) results.insert(results.end(), l.begin(), l.end());
  return call.done(gloo_->allgather(out, in, opts), results, TE_RANK);
}

WorkPtr GlooBridge::_allgather_base(at::Tensor& output, at::Tensor& input,
                                    const c10d::AllgatherOptions& opts) {
  Call call("all_gather_into_tensor", false);
  auto in = call.map(input, true, false);
  auto out = call.map(output, false, true);
  // c10d's contract (NCCL's reading): the output is one buffer of world-size inputs in
  // rank order, whatever its shape (SyncBatchNorm passes (1, size * n)); gloo splits
  // the output's first dimension into the inputs' shapes, so it gets flat views.
  if (out.is_contiguous() && in.is_contiguous() && out.numel() == in.numel() * getSize()) {
    auto flat_in = in.view({-1});
    auto flat_out = out.view({-1});
    return call.done(gloo_->_allgather_base(flat_out, flat_in, opts), {output}, TE_RANK);
  }
  return call.done(gloo_->_allgather_base(out, in, opts), {output}, TE_RANK);
}

WorkPtr GlooBridge::allgather_coalesced(std::vector<TensorList>& outputs, TensorList& inputs,
                                        const c10d::AllgatherOptions& opts) {
  Call call("allgather_coalesced", false);
  auto in = call.map(inputs, true, false);
  auto out = call.map(outputs, false, true);
  TensorList results;
  for (auto& l : outputs) results.insert(results.end(), l.begin(), l.end());
  return call.done(gloo_->allgather_coalesced(out, in, opts), results, TE_RANK);
}

WorkPtr GlooBridge::allgather_into_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                                    const c10d::AllgatherOptions& opts) {
  Call call("all_gather_into_tensor_coalesced", false);
  auto in = call.map(inputs, true, false);
  auto out = call.map(outputs, false, true);
  return call.done(gloo_->allgather_into_tensor_coalesced(out, in, opts), outputs, TE_RANK);
}

WorkPtr GlooBridge::gather(std::vector<TensorList>& outputs, TensorList& inputs,
                           const c10d::GatherOptions& opts) {
  Call call("gather", false);
  auto in = call.map(inputs, true, false);
  auto out = call.map(outputs, false, true);
  TensorList results;
  for (auto& l : outputs) results.insert(results.end(), l.begin(), l.end());
  return call.done(gloo_->gather(out, in, opts), results, TE_RANK);
}

WorkPtr GlooBridge::scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                            const c10d::ScatterOptions& opts) {
  Call call("scatter", false);
  auto in = call.map(inputs, true, false);
  auto out = call.map(outputs, false, true);
  return call.done(gloo_->scatter(out, in, opts), outputs, TE_RANK);
}

WorkPtr GlooBridge::reduce_scatter(TensorList& outputs, std::vector<TensorList>& inputs,
                                   const c10d::ReduceScatterOptions& opts) {
  auto r = reduction(opts.reduceOp);
  Call call("reduce_scatter", r.premul);
  auto in = call.map(inputs, true, false);
  for (const auto& l : in) premultiply(r, l);
  auto out = call.map(outputs, false, true);
  auto o = opts;
  o.reduceOp = r.op;
  return call.done(gloo_->reduce_scatter(out, in, o), outputs, TE_RANK,
                   averager(r, out, getSize()));
}

WorkPtr GlooBridge::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                         const c10d::ReduceScatterOptions& opts) {
  auto r = reduction(opts.reduceOp);
  Call call("reduce_scatter_tensor", r.premul);
  auto in = call.map(input, true, false);
  premultiply(r, {in});
  auto out = call.map(output, false, true);
  auto o = opts;
  o.reduceOp = r.op;
  // As _allgather_base: one input buffer of world-size outputs, whatever its shape.
  if (out.is_contiguous() && in.is_contiguous() && in.numel() == out.numel() * getSize()) {
    auto flat_in = in.view({-1});
    auto flat_out = out.view({-1});
    return call.done(gloo_->_reduce_scatter_base(flat_out, flat_in, o), {output}, TE_RANK,
                     averager(r, {out}, getSize()));
  }
  return call.done(gloo_->_reduce_scatter_base(out, in, o), {output}, TE_RANK,
                   averager(r, {out}, getSize()));
}

WorkPtr GlooBridge::reduce_scatter_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                                    const c10d::ReduceScatterOptions& opts) {
  auto r = reduction(opts.reduceOp);
  Call call("reduce_scatter_tensor_coalesced", r.premul);
  auto in = call.map(inputs, true, false);
  premultiply(r, in);
  auto out = call.map(outputs, false, true);
  auto o = opts;
  o.reduceOp = r.op;
  return call.done(gloo_->reduce_scatter_tensor_coalesced(out, in, o), outputs, TE_RANK,
                   averager(r, out, getSize()));
}

WorkPtr GlooBridge::alltoall_base(at::Tensor& output, at::Tensor& input,
                                  std::vector<int64_t>& outputSplitSizes,
                                  std::vector<int64_t>& inputSplitSizes,
                                  const c10d::AllToAllOptions& opts) {
  Call call("all_to_all_single", false);
  auto in = call.map(input, true, false);
  auto out = call.map(output, false, true);
  return call.done(gloo_->alltoall_base(out, in, outputSplitSizes, inputSplitSizes, opts), {output},
                   TE_RANK);
}

WorkPtr GlooBridge::alltoall(TensorList& outputs, TensorList& inputs,
                             const c10d::AllToAllOptions& opts) {
  // One flat exchange through alltoall_base: not every torch's ProcessGroupGloo has the
  // list form (2.11's refuses it).
  Call call("all_to_all", false);
  auto in = call.map(inputs, true, false);
  auto out = call.map(outputs, false, true);
  std::vector<at::Tensor> flat;
  std::vector<int64_t> in_splits, out_splits;
  int64_t total = 0;
  for (const auto& t : in) {
    flat.push_back(t.reshape({-1}));
    in_splits.push_back(t.numel());
  }
  for (const auto& t : out) {
    out_splits.push_back(t.numel());
    total += t.numel();
  }
  auto flat_in = at::cat(flat);
  auto flat_out = at::empty({total}, flat_in.options());
  auto scatter = [out, flat_in, flat_out, out_splits]() mutable {
    int64_t off = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].copy_(flat_out.narrow(0, off, out_splits[i]).view(out[i].sizes()));
      off += out_splits[i];
    }
  };
  return call.done(gloo_->alltoall_base(flat_out, flat_in, out_splits, in_splits, opts), outputs,
                   TE_RANK, scatter);
}

WorkPtr GlooBridge::send(TensorList& tensors, int dstRank, int tag) {
  Call call("send", false);
  auto hosts = call.map(tensors, true, false);
  return call.done(gloo_->send(hosts, dstRank, tag), tensors, TE_RANK);
}

WorkPtr GlooBridge::recv(TensorList& tensors, int srcRank, int tag) {
  Call call("recv", false);
  auto hosts = call.map(tensors, false, true);
  return call.done(gloo_->recv(hosts, srcRank, tag), tensors, TE_RANK);
}

WorkPtr GlooBridge::recvAnysource(TensorList& tensors, int tag) {
  Call call("recv", false);
  auto hosts = call.map(tensors, false, true);
  return call.done(gloo_->recvAnysource(hosts, tag), tensors, TE_RANK);
}

WorkPtr GlooBridge::barrier(const c10d::BarrierOptions& opts) { return gloo_->barrier(opts); }

void GlooBridge::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  gloo_->monitoredBarrier(opts, waitAllRanks);
}

void GlooBridge::setSequenceNumberForGroup() { gloo_->setSequenceNumberForGroup(); }
uint64_t GlooBridge::getSequenceNumberForGroup() { return gloo_->getSequenceNumberForGroup(); }
void GlooBridge::setTimeout(std::chrono::milliseconds timeout) { gloo_->setTimeout(timeout); }

#undef TE_RANK

}  // namespace torch_ext::distributed
