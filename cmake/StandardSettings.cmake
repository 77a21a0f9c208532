# One INTERFACE target carries the warning and sanitizer flags, so every
# target of the project (library, binary, tests) gets the same ones.
add_library(dlock_settings INTERFACE)
target_compile_options(dlock_settings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                       -Wno-sign-conversion)
if(DLOCK_WERROR)
  target_compile_options(dlock_settings INTERFACE -Werror)
endif()

if(DLOCK_SANITIZE)
  string(REPLACE ";" "," dlock_sanitizers "${DLOCK_SANITIZE}")
  target_compile_options(dlock_settings INTERFACE -fsanitize=${dlock_sanitizers} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(dlock_settings INTERFACE -fsanitize=${dlock_sanitizers})
endif()

# The fuzz build instruments everything for libFuzzer's coverage; only the
# fuzz targets themselves link libFuzzer's main (tests/fuzz).
if(DLOCK_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DLOCK_FUZZ needs clang: -DCMAKE_CXX_COMPILER=clang++-14 in a build directory of its own")
  endif()
  target_compile_options(dlock_settings INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(dlock_settings INTERFACE -fsanitize=address,undefined)
endif()
