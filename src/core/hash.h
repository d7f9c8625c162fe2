// FNV-1a, 64 bits: the hash Cohort compares across ranks (plans, settings) and names hosts by.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cohort {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

inline uint64_t fnv1a(const void *data, size_t len, uint64_t hash = kFnvOffset) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < len; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

inline uint64_t fnv1a(std::string_view text, uint64_t hash = kFnvOffset) {
  return fnv1a(text.data(), text.size(), hash);
}

}  // namespace cohort
