#pragma once

#include <string>
#include <string_view>

namespace dlock {

constexpr std::size_t k_max_name_bytes = 200;

// Lock names and namespaces: 1 to 200 bytes of letters, digits and
// ". _ - : / @ + =", not made only of dots. Throws UsageError naming the
// first bad character. `what` is "lock name", "namespace" or "prefix" (a
// list prefix may be dots only: it is never a name itself), used in the
// message.
void validate_name(std::string_view name, std::string_view what = "lock name");

bool is_name_char(char c);

} // namespace dlock
