# Installs qopt as an SDK: the tools, the libraries, the public headers and a CMake package
# (qoptConfig.cmake) with which third parties build pass plugins:
#
#   find_package(qopt 0.1 REQUIRED)
#   qopt_add_pass_plugin(my-passes SOURCES MyPass.cpp)
#
# Included at the end of the top-level CMakeLists.txt, once every target exists.
include(CMakePackageConfigHelpers)

set(QOPT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/qopt)

# The tools live in bin/ and find libqopt*.so in ../lib; libraries find each other in their folder.
foreach(tool qopt_driver qopt_run)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  endif()
endforeach()
if(TARGET qopt_run)
  install(TARGETS qopt_run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Plugins may use the IR and pass API (qopt::qopt) and the reference interpreter (qopt::interp).
set_target_properties(qopt_interp PROPERTIES INSTALL_RPATH "$ORIGIN")
# The libraries passes share (passes/lib: qopt::analysis, qopt::quant, qopt::qdq, ...) are
# installed and exported from their own folders.
install(TARGETS qopt_lib qopt_interp EXPORT qoptTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/ir/include/qopt/ir
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qopt)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/interp/include/qopt/interp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qopt)

install(EXPORT qoptTargets NAMESPACE qopt:: DESTINATION ${QOPT_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/qoptConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/qoptConfig.cmake
  INSTALL_DESTINATION ${QOPT_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_DATADIR)
# Plugins are checked against QOPT_PLUGIN_API_VERSION at load time; the CMake version check
# promises the same major version (see docs/writing-a-pass.md).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/qoptConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
# The lit set-up plugin golden tests share (plugins/*/test/lit.cfg.py, docs/writing-a-pass.md).
install(FILES ${CMAKE_CURRENT_LIST_DIR}/lit/qopt_lit.py DESTINATION ${CMAKE_INSTALL_DATADIR}/qopt/lit)
install(FILES
    ${CMAKE_BINARY_DIR}/cmake/qoptConfig.cmake
    ${CMAKE_BINARY_DIR}/cmake/qoptConfigVersion.cmake
  DESTINATION ${QOPT_INSTALL_CMAKEDIR})
