# `make package`: a Debian package of the gateway (CPack, DEB generator):
# arbiter and arbiter-sim in /usr/bin, the systemd unit, the example config
# as a conffile, the docs. docs/deployment.md, "Debian package";
# tests/deploy/check_package.sh builds, inspects and runs it.
include(GNUInstallDirs)

install(TARGETS arbiter arbiter-sim RUNTIME DESTINATION bin)
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/arbiter.service DESTINATION /lib/systemd/system)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/arbiter.yaml DESTINATION /etc/arbiter)
# A native package's changelog, as Debian wants it: gzip -9n'd.
configure_file(${CMAKE_CURRENT_LIST_DIR}/changelog.in ${CMAKE_BINARY_DIR}/package/changelog @ONLY)
execute_process(COMMAND gzip -9nc ${CMAKE_BINARY_DIR}/package/changelog
                OUTPUT_FILE ${CMAKE_BINARY_DIR}/package/changelog.gz COMMAND_ERROR_IS_FATAL ANY)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_CURRENT_LIST_DIR}/copyright ${CMAKE_BINARY_DIR}/package/changelog.gz
              ${CMAKE_SOURCE_DIR}/docs/deployment.md ${CMAKE_SOURCE_DIR}/docs/configuration.md
              ${CMAKE_SOURCE_DIR}/docs/security.md ${CMAKE_SOURCE_DIR}/docs/quotas.md
        DESTINATION share/doc/arbiter)
install(FILES ${CMAKE_SOURCE_DIR}/examples/minimal.yaml ${CMAKE_SOURCE_DIR}/examples/demo.yaml
              ${CMAKE_SOURCE_DIR}/examples/production.yaml
        DESTINATION share/doc/arbiter/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME arbiter)
set(CPACK_PACKAGE_VENDOR "Arbiter")
set(CPACK_PACKAGE_CONTACT "Arbiter maintainers <arbiter-maintainers@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "LLM inference arbitration gateway")
set(CPACK_PACKAGE_DESCRIPTION
    "An OpenAI-compatible gateway in front of vLLM, SGLang and llama.cpp engines:\n\
request classes and priorities, late-binding scheduling, per-tenant quotas\n\
(shared through Redis), streaming relay, drain on SIGTERM.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies from the binaries themselves (dpkg-shlibdeps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/conffiles ${CMAKE_CURRENT_LIST_DIR}/postinst
    ${CMAKE_CURRENT_LIST_DIR}/prerm ${CMAKE_CURRENT_LIST_DIR}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
