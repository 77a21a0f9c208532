# A Debian package of the install (README: "A Debian package"):
#
#   cmake --build build && (cd build && cpack -G DEB)
#
# makes build/dlock_VERSION-1_ARCH.deb from what `cmake --install` puts
# under /usr (binary and module stripped), plus what Debian asks of a
# package and a plain install does without: the man page gzipped, the
# copyright file, the changelog and examples/ in /usr/share/doc/dlock (the "debian"
# component, not installed by `cmake --install`). Dependencies are
# found by dpkg-shlibdeps; libpq and OpenSSL, loaded only when a postgres://
# or TLS URL is used, are Recommends. tests/install/deb_test.sh builds it,
# runs lintian, installs it with dpkg, uses it and removes it.

find_program(DLOCK_GZIP gzip)
set(dlock_deb_dir ${PROJECT_BINARY_DIR}/packaging)
add_custom_command(
  OUTPUT ${dlock_deb_dir}/dlock.1.gz ${dlock_deb_dir}/changelog.Debian.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${dlock_deb_dir}
  COMMAND ${DLOCK_GZIP} -9n -c ${PROJECT_SOURCE_DIR}/man/dlock.1 > ${dlock_deb_dir}/dlock.1.gz
  COMMAND ${DLOCK_GZIP} -9n -c ${PROJECT_SOURCE_DIR}/packaging/changelog > ${dlock_deb_dir}/changelog.Debian.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/man/dlock.1 ${PROJECT_SOURCE_DIR}/packaging/changelog
  COMMENT "Debian package files")
add_custom_target(dlock_deb_files ALL DEPENDS ${dlock_deb_dir}/dlock.1.gz ${dlock_deb_dir}/changelog.Debian.gz)
install(FILES ${dlock_deb_dir}/dlock.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT debian EXCLUDE_FROM_ALL)
install(FILES ${dlock_deb_dir}/changelog.Debian.gz ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT debian EXCLUDE_FROM_ALL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT debian
        EXCLUDE_FROM_ALL)
# Not a package for Debian's archive: there is no ITP bug to close.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME dlock COMPONENT debian EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dlock)
set(CPACK_PACKAGE_VENDOR "dlock developers")
set(CPACK_PACKAGE_CONTACT "dlock developers <dlock@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed locks for shell scripts and cron")
# The extended description (CPack puts the summary above it and indents it).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "dlock runs a command while holding a named lock on a backend: local kernel
locks (the default, no server), Redis, Redlock over several Redis nodes,
ZooKeeper, PostgreSQL advisory locks or etcd. A heartbeat renews the lease
while the command runs, the command is stopped before the lease can lapse
if renewal fails, and every holder gets a fencing token that strictly
increases. Scripts can also acquire, renew and release by hand, and see who
holds what.")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libpq5, libssl3")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Installed with DESTDIR and the prefix /usr, so that the completions go
# where Debian's shells look under /usr (cmake/InstallCompletions.cmake).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
# One package of the plain install and the debian component; the plain man
# page is left out (its gzipped copy is in the package).
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified debian)
set(CPACK_STRIP_FILES ON)
include(CPack)
