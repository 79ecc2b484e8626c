#pragma once
// The device allocator (a caching c10::DeviceAllocator registered for
// PrivateUse1) and the pinned host allocator (registered with
// REGISTER_HOST_ALLOCATOR).

#include <c10/core/CachingDeviceAllocator.h>

#include <optional>

namespace torch_ext::runtime {

c10::DeviceAllocator& deviceAllocator();
at::Allocator& pinnedAllocator();

// The device owning `ptr` (which may point inside a block), if ours.
std::optional<c10::DeviceIndex> deviceOfPointer(const void* ptr);
bool isPinnedPointer(const void* ptr);

}  // namespace torch_ext::runtime
