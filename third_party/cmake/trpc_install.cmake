# `cmake --install <build> --prefix P` puts the framework under P:
#   include/trpc/...           every header of trpc/ (detail/ ones too: public headers use them)
#   lib/libtrpc_*.a            the static libraries
#   bin/protoc-gen-trpc        the protoc plug-in
#   bin/trpc-cli               the command-line client (docs/cli.md)
#   lib/cmake/trpc/            trpcConfig.cmake (+ version, exported targets trpc::*,
#                              trpc_proto.cmake with trpc_proto_library(), and
#                              trpc_gperftools.cmake, which finds libprofiler on the user's side)
#   lib/pkgconfig/trpc.pc      for builds without CMake
# Included from the top-level CMakeLists.txt once trpc/ is defined. docs/install.md.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TRPC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/trpc")

# Every library target defined in `dir` and below it: the layers, the codec plug-ins, the trpc
# umbrella, and whatever library a layer adds later, without a list to keep in step.
function(_trpc_library_targets dir out)
  set(found)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type MATCHES "_LIBRARY$")
      list(APPEND found ${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    _trpc_library_targets("${sub}" sub_found)
    list(APPEND found ${sub_found})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# Appends to the global property TRPC_LINK_ORDER the libraries among `ours` that `target` needs,
# each after all that need it (post-order), and records in TRPC_LINK_WHOLE those linked with
# WHOLE_ARCHIVE. Reversed, the order is the static link order for trpc.pc.
function(_trpc_visit target ours)
  get_property(done GLOBAL PROPERTY TRPC_LINK_ORDER)
  if(target IN_LIST done)
    return()
  endif()
  get_target_property(type ${target} TYPE)
  set(deps)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(deps ${target} LINK_LIBRARIES)
  endif()
  get_target_property(interface_deps ${target} INTERFACE_LINK_LIBRARIES)
  foreach(dep ${deps} ${interface_deps})
    # The build tree's form; the $<INSTALL_INTERFACE:...> twin names the same library.
    string(REGEX REPLACE "^\\$<BUILD_INTERFACE:(.*)>$" "\\1" dep "${dep}")
    if(dep MATCHES "^\\$<LINK_LIBRARY:WHOLE_ARCHIVE,(.+)>$")
      set(dep "${CMAKE_MATCH_1}")
      set_property(GLOBAL APPEND PROPERTY TRPC_LINK_WHOLE ${dep})
    elseif(dep MATCHES "^\\$<LINK_ONLY:(.+)>$")
      set(dep "${CMAKE_MATCH_1}")
    endif()
    if(dep IN_LIST ours)
      _trpc_visit(${dep} "${ours}")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY TRPC_LINK_ORDER ${target})
endfunction()

# The Libs: line of trpc.pc: our archives in link order (plug-ins inside --whole-archive, like
# trpc::trpc does), then the dependencies that have no .pc file of their own (those that have one,
# libprofiler included, are in Requires).
function(_trpc_pc_libs out)
  _trpc_library_targets("${PROJECT_SOURCE_DIR}/trpc" ours)
  set_property(GLOBAL PROPERTY TRPC_LINK_ORDER)
  set_property(GLOBAL PROPERTY TRPC_LINK_WHOLE)
  _trpc_visit(trpc "${ours}")
  get_property(order GLOBAL PROPERTY TRPC_LINK_ORDER)
  get_property(whole GLOBAL PROPERTY TRPC_LINK_WHOLE)
  list(REVERSE order)
  set(libs)
  foreach(lib ${order})
    get_target_property(type ${lib} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      continue()
    elseif(lib IN_LIST whole)
      list(APPEND libs "-Wl,--whole-archive" "-l${lib}" "-Wl,--no-whole-archive")
    else()
      list(APPEND libs "-l${lib}")
    endif()
  endforeach()
  list(APPEND libs -lboost_context -pthread)
  if(TRPC_BUILD_MODE STREQUAL "ASAN")
    list(APPEND libs -fsanitize=address,undefined)
  elseif(TRPC_BUILD_MODE STREQUAL "TSAN")
    list(APPEND libs -fsanitize=thread)
  endif()
  list(JOIN libs " " libs)
  set(${out} "${libs}" PARENT_SCOPE)
endfunction()

_trpc_library_targets("${PROJECT_SOURCE_DIR}/trpc" _trpc_libraries)
install(TARGETS ${_trpc_libraries} protoc-gen-trpc
  EXPORT trpcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS trpc-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/trpc/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/trpc"
  FILES_MATCHING PATTERN "*.h"
  PATTERN "tools" EXCLUDE)

install(EXPORT trpcTargets
  NAMESPACE trpc::
  DESTINATION "${TRPC_INSTALL_CMAKEDIR}")
set(TRPC_BOOST_VERSION "${Boost_VERSION_MAJOR}.${Boost_VERSION_MINOR}")
# trpc_admin links trpc::gperftools_profiler when this build found it: the package must too.
if(TRPC_PROFILER_LIB)
  set(TRPC_PACKAGE_NEEDS_PROFILER TRUE)
  set(TRPC_PC_REQUIRES "protobuf yaml-cpp fmt libnghttp2 libssl libcrypto zlib snappy liblz4 libprofiler")
else()
  set(TRPC_PACKAGE_NEEDS_PROFILER FALSE)
  set(TRPC_PC_REQUIRES "protobuf yaml-cpp fmt libnghttp2 libssl libcrypto zlib snappy liblz4")
endif()
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/trpcConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/trpcConfig.cmake"
  INSTALL_DESTINATION "${TRPC_INSTALL_CMAKEDIR}")
# 0.x: a minor version may break the API.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/trpcConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/trpcConfig.cmake"
  "${PROJECT_BINARY_DIR}/trpcConfigVersion.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/trpc_proto.cmake"
  "${CMAKE_CURRENT_LIST_DIR}/trpc_gperftools.cmake"
  DESTINATION "${TRPC_INSTALL_CMAKEDIR}")

# trpc.pc names its prefix relative to its own directory, so the installed tree can move.
_trpc_pc_libs(TRPC_PC_LIBS)
file(RELATIVE_PATH TRPC_PC_PREFIX_FROM_PCDIR
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" TRPC_PC_PREFIX_FROM_PCDIR "${TRPC_PC_PREFIX_FROM_PCDIR}")
configure_file("${CMAKE_CURRENT_LIST_DIR}/trpc.pc.in" "${PROJECT_BINARY_DIR}/trpc.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/trpc.pc"
  DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
