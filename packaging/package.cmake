# The Debian package (docs/operations.md, "Packaging and services"):
#   cmake --build build && (cd build && cpack -G DEB)
# gives build/baton_<version>_<arch>.deb with /usr/bin/baton (and baton-sim, which
# replays an incident journal), systemd units
# for a node and a worker, example configurations and the docs. Its
# maintainer scripts make a `baton` system user and /etc/baton.
include(GNUInstallDirs)

install(TARGETS baton RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The replay of an incident journal (docs/assurance.md, "Incident replay"),
# where the node is: the same core as this build's `baton`.
install(TARGETS baton-sim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES packaging/systemd/baton-node.service packaging/systemd/baton-worker.service
        DESTINATION lib/systemd/system)
install(FILES configs/node.yaml configs/worker.yaml DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# The skeletons postinst copies to /etc when absent (outside /usr/share/doc,
# which minimal images leave out).
install(FILES configs/node.yaml configs/worker.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/baton/skeleton)
install(DIRECTORY configs/jobs DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME baton)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Baton maintainers <baton@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "cluster coordinator for on-prem worker fleets")
set(CPACK_PACKAGE_DESCRIPTION
    "Baton runs scheduled and triggered jobs on a fleet of workers, exactly once under crashes, pauses and partitions. Coordinator nodes share one PostgreSQL database and elect a leader there; workers attach over TLS WebSocket.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the binary's libraries (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "postgresql-15")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/packaging/debian/postinst;${CMAKE_SOURCE_DIR}/packaging/debian/prerm;${CMAKE_SOURCE_DIR}/packaging/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # the build is RelWithDebInfo: ship the binary without its debug info
include(CPack)
