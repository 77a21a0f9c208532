# Run by `cmake --install` (install(SCRIPT) in the top-level CMakeLists.txt):
# installs the bash, zsh and fish completions where each shell looks for
# them under the prefix of this install, which may differ from the
# configured one (cmake --install --prefix DIR). dlock_completions,
# dlock_datadir and dlock_{bash,zsh,fish}_dir (empty: chosen here) are set
# by the install(CODE) before this script.
#
# Where Debian 12 looks, with XDG_DATA_DIRS unset as under cron, ssh and su:
#   bash-completion 2.11: ~/.local/share, then each of XDG_DATA_DIRS (default
#     /usr/local/share:/usr/share) + /bash-completion/completions.
#   zsh 5.9's fpath: /usr/local/share/zsh/site-functions,
#     /usr/share/zsh/vendor-functions, /usr/share/zsh/vendor-completions
#     (and zsh's own): upstream zsh's site directory is
#     PREFIX/share/zsh/site-functions; Debian's packages use vendor-completions.
#   fish 3.6's fish_complete_path: ~/.config/fish/completions,
#     /etc/fish/completions, ~/.local/share/fish/vendor_completions.d,
#     /usr/share/fish/vendor_completions.d (and fish's own); under /usr/local
#     only /etc/fish/completions, the directory fish keeps for the system's
#     administrator.
string(REGEX REPLACE "(.)/+$" "\\1" dlock_prefix "${CMAKE_INSTALL_PREFIX}")
if(IS_ABSOLUTE "${dlock_datadir}")
  set(dlock_share "${dlock_datadir}")
else()
  set(dlock_share "${dlock_prefix}/${dlock_datadir}")
endif()

if(NOT dlock_bash_dir)
  set(dlock_bash_dir "${dlock_share}/bash-completion/completions")
endif()

if(NOT dlock_zsh_dir)
  if(dlock_prefix STREQUAL "/usr" AND EXISTS "/etc/debian_version")
    set(dlock_zsh_dir "${dlock_share}/zsh/vendor-completions")
  else()
    set(dlock_zsh_dir "${dlock_share}/zsh/site-functions")
  endif()
endif()

if(NOT dlock_fish_dir)
  if(dlock_prefix STREQUAL "/usr/local")
    set(dlock_fish_dir "/etc/fish/completions")
  else()
    set(dlock_fish_dir "${dlock_share}/fish/vendor_completions.d")
  endif()
endif()

foreach(dir dlock_bash_dir dlock_zsh_dir dlock_fish_dir)
  if(NOT IS_ABSOLUTE "${${dir}}")
    set(${dir} "${dlock_prefix}/${${dir}}")
  endif()
endforeach()

# file(INSTALL) puts DESTDIR in front and records the files in
# install_manifest.txt, as install(FILES) does.
file(INSTALL DESTINATION "${dlock_bash_dir}" TYPE FILE FILES "${dlock_completions}/dlock.bash" RENAME dlock)
file(INSTALL DESTINATION "${dlock_zsh_dir}" TYPE FILE FILES "${dlock_completions}/_dlock")
file(INSTALL DESTINATION "${dlock_fish_dir}" TYPE FILE FILES "${dlock_completions}/dlock.fish")
