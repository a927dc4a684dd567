# Finds the system (Debian) packages the framework builds on. See third_party/setup.sh.
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context)
find_package(fmt REQUIRED)
find_package(yaml-cpp REQUIRED)
# TLS (trpc/transport/tls_context.cc): Debian's OpenSSL 3 (libssl-dev).
find_package(OpenSSL 3 REQUIRED)
# HTTP/2 (the gRPC plug-in): nghttp2 has no CMake package, only a .pc file.
find_package(PkgConfig REQUIRED)
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET GLOBAL libnghttp2)
# Body compressions (trpc/codec/detail/compression.cc: the trpc protocol's content_encoding, and
# gRPC's grpc-encoding gzip/deflate): zlib; snappy, which has a CMake package (Snappy::snappy);
# lz4, which has only a .pc file (its frame API, lz4frame.h, included).
find_package(ZLIB REQUIRED)
find_package(Snappy REQUIRED)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET GLOBAL liblz4)
if(TRPC_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TRPC_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

# gperftools' CPU profiler (libgoogle-perftools-dev), for the admin service's /cmds/profile/cpu;
# without it that endpoint answers 501. trpc/admin links TRPC_PROFILER_LIB: the name of the
# imported target, so the installed package names no file of this machine (trpc_gperftools.cmake).
include(trpc_gperftools)
unset(TRPC_PROFILER_LIB CACHE)  # a path, in build trees configured before
if(TARGET trpc::gperftools_profiler)
  set(TRPC_PROFILER_LIB trpc::gperftools_profiler)
else()
  set(TRPC_PROFILER_LIB "")
endif()

# protoc's plugin library (for protoc-gen-trpc).
find_library(TRPC_PROTOC_LIB NAMES protoc)

if(TRPC_USE_TCMALLOC)
  find_library(TRPC_TCMALLOC_LIB NAMES tcmalloc_minimal tcmalloc)
  if(NOT TRPC_TCMALLOC_LIB)
    message(FATAL_ERROR "tcmalloc not found: install libgoogle-perftools-dev or pass -DTRPC_USE_TCMALLOC=OFF")
  endif()
  message(STATUS "trpc: linking ${TRPC_TCMALLOC_LIB}")
endif()
