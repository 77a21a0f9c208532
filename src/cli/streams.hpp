#pragma once

// std::cin, std::cout, std::cerr and std::clog without the static
// std::ios_base::Init that <iostream> puts in every translation unit
// including it (libstdc++ before GCC 13): it builds the standard streams
// and the global locale when the program starts, about 50,000
// instructions, a tenth of a short `dlock run`, which never uses them.
// cli_main constructs a std::ios_base::Init instead, before any command
// that may use them runs. CLI11 includes <iostream> too: include it
// through cli/cli11.hpp.
#include <istream>
#include <ostream>

#if defined(__GLIBCXX__) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1
namespace std {
// As <iostream> declares them; libstdc++ defines them.
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
} // namespace std
#else
#include "cli/streams.hpp"
#endif
