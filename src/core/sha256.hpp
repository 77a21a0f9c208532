#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace dlock {

// SHA-256 (FIPS 180-4) of `data`. Small inputs only matter here (lock
// keys); it is not meant for bulk hashing.
std::array<std::uint8_t, 32> sha256(std::string_view data);

} // namespace dlock
