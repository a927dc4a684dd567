# TRPC_BUILD_GRPC_PEER: build grpc_echo_server and its test. Needs Debian's libgrpc++-dev and
# protobuf-compiler-grpc, which third_party/setup.sh does not install; on by default when found.
# Included by benchmark/baseline and test/benchmark_servers (the test folder is configured first).
if(NOT DEFINED _trpc_have_grpc)
  find_package(gRPC CONFIG QUIET)
  find_program(TRPC_GRPC_CPP_PLUGIN grpc_cpp_plugin)
  if(gRPC_FOUND AND TRPC_GRPC_CPP_PLUGIN)
    set(_trpc_have_grpc ON)
  else()
    set(_trpc_have_grpc OFF)
  endif()
endif()
option(TRPC_BUILD_GRPC_PEER "Build benchmark/baseline/grpc_echo_server (needs gRPC C++)"
       ${_trpc_have_grpc})
if(TRPC_BUILD_GRPC_PEER AND NOT _trpc_have_grpc)
  message(FATAL_ERROR "TRPC_BUILD_GRPC_PEER: gRPC C++ not found "
                      "(apt-get install libgrpc++-dev protobuf-compiler-grpc)")
endif()
