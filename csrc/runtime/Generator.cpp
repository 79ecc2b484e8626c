#include "launch/Plan.h"
#include "runtime/Generator.h"

#include "runtime/Device.h"

#include <ATen/core/Tensor.h>
#include <c10/core/GeneratorImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <ATen/ops/empty.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <random>

namespace torch_ext::runtime {
namespace {

constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's default_rng_seed_val

class PhiloxGenerator final : public c10::GeneratorImpl {
 public:
  explicit PhiloxGenerator(c10::DeviceIndex device, uint64_t seed = kDefaultSeed)
      : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        seed_(seed) {}

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t current_seed() const override { return seed_; }
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  uint64_t seed() override {
    uint64_t s = (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
    set_current_seed(s);
    return s;
  }

  // State: 16 bytes, the seed then the offset (host byte order), as a uint8
  // CPU tensor like every other generator's state.
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto state = at::empty({16}, at::TensorOptions().dtype(at::kByte).device(at::kCPU));
    auto* p = state.data_ptr<uint8_t>();
    std::memcpy(p, &seed_, 8);
    std::memcpy(p + 8, &offset_, 8);
    return state.getIntrusivePtr();
  }
  void set_state(const c10::TensorImpl& state) override {
    at::detail::check_rng_state(state);
    TORCH_CHECK(state.numel() == 16, "privateuseone generator state must be 16 bytes, got ",
                state.numel());
    auto* p = static_cast<const uint8_t*>(state.data());
    std::memcpy(&seed_, p, 8);
    std::memcpy(&offset_, p + 8, 8);
  }

  std::pair<uint64_t, uint64_t> take(uint64_t increment) {
    uint64_t offset = offset_;
    offset_ += (increment + 3) / 4 * 4;
    return {seed_, offset};
  }

 private:
  PhiloxGenerator* clone_impl() const override {
    auto* g = new PhiloxGenerator(device().index(), seed_);
    g->offset_ = offset_;
    return g;
  }

  uint64_t seed_;
  uint64_t offset_ = 0;
};

std::once_flag init_flag;
std::deque<at::Generator> defaults;

}  // namespace

const at::Generator& defaultGenerator(c10::DeviceIndex device) {
  std::call_once(init_flag, [] {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      defaults.push_back(at::make_generator<PhiloxGenerator>(d));
    }
  });
  return defaults[resolve_device(device)];
}

at::Generator newGenerator(c10::DeviceIndex device) {
  return at::make_generator<PhiloxGenerator>(resolve_device(device));
}

std::pair<uint64_t, uint64_t> philoxSeedOffset(const std::optional<at::Generator>& gen,
                                               c10::DeviceIndex device, uint64_t increment) {
  at::Generator g = gen.has_value() && gen->defined() ? *gen : defaultGenerator(device);
  auto* impl = at::check_generator<PhiloxGenerator>(g);
  launch::plan::note_philox(!(gen.has_value() && gen->defined()), resolve_device(device),
                            increment);
  std::lock_guard<std::mutex> lock(g.mutex());
  return impl->take(increment);
}

}  // namespace torch_ext::runtime
