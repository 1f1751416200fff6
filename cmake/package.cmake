# The Debian package (CPack's DEB generator): the executable in /usr/bin, the systemd unit,
# the default config as a conffile, and maintainer scripts that create the cairva user and
# /var/lib/cairva (cairva:cairva, 0700). Build it after the executable:
#   cpack --config build/CPackConfig.cmake -B build/package
# (scripts/package-test.sh builds, installs, checks and removes it.)
if(NOT TARGET cairva)
  return()
endif()

# Installing (and so cpack) takes the executable as built and builds nothing else: the
# release build (scripts/build-release.sh) builds the executable alone.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)
install(TARGETS cairva RUNTIME DESTINATION bin)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/cairva.service DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/cairva.toml DESTINATION /etc/cairva)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/operations.md
        DESTINATION share/doc/cairva)
# Examples to copy: nginx for TLS in front, Prometheus alerting rules.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/nginx/cairva.conf DESTINATION share/doc/cairva/examples/nginx)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/prometheus/cairva-rules.yml
        DESTINATION share/doc/cairva/examples/prometheus)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cairva)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Cairva operators <ops@cairva.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OpenAI-compatible gateway that sells LLM capacity exactly")
set(CPACK_PACKAGE_DESCRIPTION "Admits each request against a buyer's allocation (allowance, window, \
rate limits), holds allowance before forwarding it to the provider and books the real token \
counts exactly once, durably.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries' packages, found by dpkg-shlibdeps; adduser for postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
