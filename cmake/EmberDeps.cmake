# pthreadpool and XNNPACK as imported targets, ember_deps::pthreadpool and
# ember_deps::XNNPACK: Debian ships them (libpthreadpool-dev, libxnnpack-dev)
# without CMake packages. Used by Ember's build and by the installed
# EmberConfig.cmake, which sets EMBER_DEPS_*_HINTS to where the build found
# them. In: EMBER_DEPS_PTHREADPOOL, EMBER_DEPS_XNNPACK (what to look for).
# Out: EMBER_DEPS_MISSING, the libraries not found (empty when all were).
set(EMBER_DEPS_MISSING "")

if(EMBER_DEPS_PTHREADPOOL AND NOT TARGET ember_deps::pthreadpool)
  find_path(EMBER_PTHREADPOOL_INCLUDE_DIR pthreadpool.h HINTS ${EMBER_DEPS_PTHREADPOOL_HINTS})
  find_library(EMBER_PTHREADPOOL_LIBRARY pthreadpool HINTS ${EMBER_DEPS_PTHREADPOOL_HINTS})
  if(EMBER_PTHREADPOOL_INCLUDE_DIR AND EMBER_PTHREADPOOL_LIBRARY)
    add_library(ember_deps::pthreadpool UNKNOWN IMPORTED GLOBAL)
    set_target_properties(ember_deps::pthreadpool PROPERTIES
      IMPORTED_LOCATION ${EMBER_PTHREADPOOL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${EMBER_PTHREADPOOL_INCLUDE_DIR})
  else()
    list(APPEND EMBER_DEPS_MISSING pthreadpool)
  endif()
endif()

if(EMBER_DEPS_XNNPACK AND NOT TARGET ember_deps::XNNPACK)
  find_path(EMBER_XNNPACK_INCLUDE_DIR xnnpack.h HINTS ${EMBER_DEPS_XNNPACK_HINTS})
  find_library(EMBER_XNNPACK_LIBRARY XNNPACK HINTS ${EMBER_DEPS_XNNPACK_HINTS})
  if(EMBER_XNNPACK_INCLUDE_DIR AND EMBER_XNNPACK_LIBRARY)
    add_library(ember_deps::XNNPACK UNKNOWN IMPORTED GLOBAL)
    set_target_properties(ember_deps::XNNPACK PROPERTIES
      IMPORTED_LOCATION ${EMBER_XNNPACK_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${EMBER_XNNPACK_INCLUDE_DIR})
  else()
    list(APPEND EMBER_DEPS_MISSING XNNPACK)
  endif()
endif()
