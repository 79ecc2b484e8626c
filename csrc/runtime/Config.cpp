// See Config.h. The table of every variable, Python's view and the README's
// documentation are in torch_ext/config.py.
#include "runtime/Config.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <cstdlib>

namespace torch_ext::config {
namespace {

// The variable's text, or nullopt where it is unset or empty (empty means
// "use the default" for every variable).
std::optional<std::string> read(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string choice(const char* name, const char* fallback, const char* a, const char* b,
                   const char* c) {
  std::string value = read(name).value_or(fallback);
  TORCH_CHECK(value == a || value == b || value == c, name, " must be ", a, ", ", b, " or ", c,
              ", got '", value, "'");
  return value;
}

}  // namespace

size_t parse_bytes(const char* name, const std::string& text) {
  // Digits with an optional fraction, then an optional K/M/G/T: exactly what
  // torch_ext/config.py accepts (no sign, spaces, exponent, hex, inf or nan).
  size_t i = 0, digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  double scale = 1;
  if (i + 1 == text.size()) {
    switch (text[i]) {
      case 'k':
      case 'K':
        scale = 1024.0;
        break;
      case 'm':
      case 'M':
        scale = 1024.0 * 1024;
        break;
      case 'g':
      case 'G':
        scale = 1024.0 * 1024 * 1024;
        break;
      case 't':
      case 'T':
        scale = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        digits = 0;
    }
    ++i;
  }
  TORCH_CHECK(digits > 0 && i == text.size(), name, ": cannot parse '", text,
              "' as a number of bytes (e.g. 4096, 512M, 2G; suffixes K, M, G, T)");
  return static_cast<size_t>(std::strtod(text.c_str(), nullptr) * scale);
}

bool parse_bool(const char* name, const std::string& text) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") return true;
  if (text == "0" || text == "false" || text == "no" || text == "off") return false;
  TORCH_CHECK(false, name, " must be 0 or 1, got '", text, "'");
}

std::string driver() { return choice("TORCH_EXT_DRIVER", "auto", "auto", "host", "cuda"); }

std::string fallback() { return choice("TORCH_EXT_FALLBACK", "warn", "warn", "silent", "error"); }

int host_devices() {
  auto text = read("TORCH_EXT_HOST_DEVICES");
  if (!text) return 1;
  // Digits only, as torch_ext/config.py accepts (strtol would skip spaces).
  bool digits = text->size() <= 2;
  for (char c : *text) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  long n = digits ? std::strtol(text->c_str(), nullptr, 10) : 0;
  TORCH_CHECK(n >= 1 && n <= 64, "TORCH_EXT_HOST_DEVICES must be 1..64, got '", *text, "'");
  return static_cast<int>(n);
}

std::optional<size_t> host_memory_limit() {
  auto text = read("TORCH_EXT_HOST_MEMORY_LIMIT");
  if (!text) return std::nullopt;
  return parse_bytes("TORCH_EXT_HOST_MEMORY_LIMIT", *text);
}

bool host_protect() {
  auto text = read("TORCH_EXT_HOST_PROTECT");
  return text ? parse_bool("TORCH_EXT_HOST_PROTECT", *text) : false;
}

bool fast_launch() {
  auto text = read("TORCH_EXT_FAST_LAUNCH");
  return text ? parse_bool("TORCH_EXT_FAST_LAUNCH", *text) : true;
}

}  // namespace torch_ext::config
