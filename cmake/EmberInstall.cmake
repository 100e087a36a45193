# `cmake --install`: the public headers under include/ember (paths as in the
# tree: "extension/module/module.h"), the static libraries and the Ember CMake
# package (lib/cmake/Ember). docs/cpp-packages.md.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(EMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember/runtime
        FILES_MATCHING PATTERN "*.h" PATTERN "test" EXCLUDE)
# bundled_program: .bpte test cases (#19), part of Ember::module.
foreach(part module tensor data_loader flat_tensor bundled_program)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/extension/${part}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember/extension/${part}
          FILES_MATCHING PATTERN "*.h" PATTERN "test" EXCLUDE)
endforeach()

# Exported names: Ember::<EXPORT_NAME>. The *_whole INTERFACE targets link
# their archives whole ($<LINK_LIBRARY:WHOLE_ARCHIVE,...>): the kernels and
# delegates register themselves from static objects nothing else references.
set_target_properties(ember_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(ember_extension PROPERTIES EXPORT_NAME module)
set_target_properties(ember_portable_kernels PROPERTIES EXPORT_NAME portable_kernels_archive)
set_target_properties(ember_kernel_registry_all PROPERTIES EXPORT_NAME kernel_registry_archive)
set_target_properties(ember_portable_kernels_whole PROPERTIES EXPORT_NAME portable_kernels)
set_target_properties(ember_backend_demo PROPERTIES EXPORT_NAME demo_backend_archive)
set_target_properties(ember_backend_demo_whole PROPERTIES EXPORT_NAME demo_backend)
set_target_properties(ember_backend_xnnpack PROPERTIES EXPORT_NAME xnnpack_backend_archive)
set_target_properties(ember_backend_xnnpack_whole PROPERTIES EXPORT_NAME xnnpack_backend)
install(TARGETS ember_runtime ember_extension ember_portable_kernels ember_kernel_registry_all
                ember_portable_kernels_whole ember_backend_demo ember_backend_demo_whole
                ember_backend_xnnpack ember_backend_xnnpack_whole
        EXPORT EmberTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember)
install(EXPORT EmberTargets NAMESPACE Ember:: DESTINATION ${EMBER_CMAKE_DIR})

# The config looks for pthreadpool and XNNPACK where this build found them first.
set(EMBER_DEPS_PTHREADPOOL_FOUND_DIRS "")
if(EMBER_THREADS)
  get_filename_component(_lib_dir ${EMBER_PTHREADPOOL_LIBRARY} DIRECTORY)
  set(EMBER_DEPS_PTHREADPOOL_FOUND_DIRS "${_lib_dir};${EMBER_PTHREADPOOL_INCLUDE_DIR}")
endif()
get_filename_component(_lib_dir ${EMBER_XNNPACK_LIBRARY} DIRECTORY)
set(EMBER_DEPS_XNNPACK_FOUND_DIRS "${_lib_dir};${EMBER_XNNPACK_INCLUDE_DIR}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/EmberConfig.cmake.in
  ${PROJECT_BINARY_DIR}/EmberConfig.cmake INSTALL_DESTINATION ${EMBER_CMAKE_DIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/EmberConfig.cmake ${PROJECT_BINARY_DIR}/EmberConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/EmberDeps.cmake
        DESTINATION ${EMBER_CMAKE_DIR})

if(EMBER_BUILD_TOOLS)
  install(TARGETS ember-run ember-inspect ember-oplist RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
