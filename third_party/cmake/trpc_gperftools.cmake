# gperftools' CPU profiler (Debian: libgoogle-perftools-dev), which trpc_admin links for the
# admin service's /cmds/profile/cpu, as the imported target trpc::gperftools_profiler. Defines
# nothing when libprofiler is not found.
#
# Two users: the framework's build (trpc_dependencies.cmake) and an installed package, where
# trpcConfig.cmake includes this copy from lib/cmake/trpc/. The exported trpc_admin names the
# target, never a file, so the library is looked up on the machine that builds against the
# package, at its configure time; -DTRPC_PROFILER_LIBRARY=<path> picks one by hand.

if(NOT TARGET trpc::gperftools_profiler)
  find_library(TRPC_PROFILER_LIBRARY NAMES profiler
    DOC "gperftools' libprofiler, linked by trpc_admin")
  mark_as_advanced(TRPC_PROFILER_LIBRARY)
  if(TRPC_PROFILER_LIBRARY)
    add_library(trpc::gperftools_profiler UNKNOWN IMPORTED)
    set_target_properties(trpc::gperftools_profiler PROPERTIES
      IMPORTED_LOCATION "${TRPC_PROFILER_LIBRARY}")
  endif()
endif()
