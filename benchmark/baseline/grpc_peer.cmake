# TRPC_BUILD_GRPC_PEER: build the gRPC C++ peers (benchmark/baseline's grpc_echo_server and
# test/grpc_interop's interop server and client). Needs Debian's libgrpc++-dev and
# protobuf-compiler-grpc (third_party/setup.sh --with-bench or --with-test-tools installs them).
#   AUTO (default): on when gRPC C++ is found. Looked for again at every configure, so a build dir
#                   configured before the packages were installed picks them up on its next
#                   cmake run: nothing sticks at OFF.
#   ON:             required; configuring fails without it.
#   OFF:            never built.
# Included by benchmark/baseline and test/grpc_interop (the test folder is configured first).
if(NOT DEFINED _trpc_have_grpc)
  # A cache from before AUTO existed holds the detected value as a BOOL option: forget it.
  get_property(_trpc_peer_type CACHE TRPC_BUILD_GRPC_PEER PROPERTY TYPE)
  if(_trpc_peer_type STREQUAL "BOOL")
    unset(TRPC_BUILD_GRPC_PEER CACHE)
  endif()
  set(TRPC_BUILD_GRPC_PEER AUTO CACHE STRING
      "Build the gRPC C++ peers: AUTO (when gRPC C++ is found, checked at every configure), ON, OFF")
  set_property(CACHE TRPC_BUILD_GRPC_PEER PROPERTY STRINGS AUTO ON OFF)
  set(_trpc_have_grpc OFF)
  if(NOT TRPC_BUILD_GRPC_PEER STREQUAL "OFF")
    # Not-found results are cached as *-NOTFOUND, which find_package and find_program search
    # again on the next configure.
    find_package(gRPC CONFIG QUIET)
    find_program(TRPC_GRPC_CPP_PLUGIN grpc_cpp_plugin)
    if(gRPC_FOUND AND TRPC_GRPC_CPP_PLUGIN)
      set(_trpc_have_grpc ON)
    endif()
  endif()
  if(TRPC_BUILD_GRPC_PEER STREQUAL "ON" AND NOT _trpc_have_grpc)
    message(FATAL_ERROR "TRPC_BUILD_GRPC_PEER=ON: gRPC C++ not found "
                        "(apt-get install libgrpc++-dev protobuf-compiler-grpc)")
  endif()
  if(NOT _trpc_have_grpc AND NOT TRPC_BUILD_GRPC_PEER STREQUAL "OFF")
    message(STATUS "gRPC C++ not found: the grpc++ peers are not built "
                   "(their interop cases skip, or fail under CI=true)")
  endif()
  # The folders test `if(TRPC_GRPC_PEER_ENABLED)`.
  set(TRPC_GRPC_PEER_ENABLED ${_trpc_have_grpc})
endif()
