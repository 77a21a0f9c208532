# One INTERFACE target carries the warning and sanitizer flags, so every
# target of the project (library, binary, modules, tests) gets the same ones.
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
