// The run-time configuration read from the environment: the only place in
// C++ that calls getenv. Each function reads its variable when called (callers
// that decide once cache the answer) and throws an error naming the variable
// for a bad value. torch_ext/config.py holds the same table for Python, with
// the same defaults; torch_ext._C._config() returns this side's parsed values
// so that tests/runtime/test_config.py can check that the two agree.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace torch_ext::config {

// TORCH_EXT_DRIVER: "auto" (default), "host" or "cuda".
std::string driver();
// TORCH_EXT_FALLBACK: "warn" (default), "silent" or "error".
std::string fallback();
// TORCH_EXT_HOST_DEVICES: 1..64, default 1.
int host_devices();
// TORCH_EXT_HOST_MEMORY_LIMIT: bytes (suffixes K/M/G/T); nullopt = unset
// (the host driver then uses the machine's physical memory).
std::optional<size_t> host_memory_limit();
// TORCH_EXT_HOST_PROTECT: default false.
bool host_protect();
// TORCH_EXT_FAST_LAUNCH: default true (0 keeps every launch on Python).
bool fast_launch();

// Parsers, shared with the setters that take the same text at run time.
size_t parse_bytes(const char* name, const std::string& text);
bool parse_bool(const char* name, const std::string& text);

}  // namespace torch_ext::config
