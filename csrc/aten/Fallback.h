#pragma once
// Settings and statistics of the CPU fallback (Fallback.cpp), for Python.

#include <cstdint>
#include <map>
#include <string>

namespace torch_ext::aten {

enum class FallbackMode { Warn, Silent, Error };

FallbackMode fallbackMode();
void setFallbackMode(FallbackMode mode);
FallbackMode parseFallbackMode(const std::string& text);
const char* fallbackModeName(FallbackMode mode);

// {"aten::op.overload": times run on the CPU}
std::map<std::string, int64_t> fallbackStats();
void resetFallbackStats();

}  // namespace torch_ext::aten
