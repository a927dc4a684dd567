# One helper per kind of target, so adding a library, test, benchmark or fuzz target is one call.
#
#   trpc_cc_library(NAME n SRCS a.cc ... [DEPS d ...] [PUBLIC_DEPS ...])
#   trpc_cc_binary(NAME n SRCS ... [DEPS ...])
#   trpc_cc_test(NAME n SRCS ... [DEPS ...] [TIMEOUT s] [LABELS l ...] [FIBER_ENV VAR])
#   trpc_missing_peer_test(NAME n WHY text)
#   trpc_cc_benchmark(NAME n SRCS ... [DEPS ...])
#   trpc_cc_fuzz(NAME n SRCS ... [DEPS ...] [CORPUS dir])
#
# trpc_proto_library() (protoc + protoc-gen-trpc) lives in trpc_proto.cmake, which installed
# packages ship too.

set(TRPC_WARNINGS -Wall -Wextra -Werror -Wno-unused-parameter)

function(_trpc_common target)
  target_compile_options(${target} PRIVATE ${TRPC_WARNINGS})
  # The headers are C++20: say so on every target, so installed ones pass it on to their users.
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>)
endfunction()

function(_trpc_link_malloc target)
  if(TRPC_USE_TCMALLOC)
    target_link_libraries(${target} PRIVATE ${TRPC_TCMALLOC_LIB})
  endif()
endfunction()

function(trpc_cc_library)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(${A_NAME} ${A_SRCS})
  _trpc_common(${A_NAME})
  target_link_libraries(${A_NAME} PUBLIC ${A_DEPS} ${A_PUBLIC_DEPS})
endfunction()

function(trpc_cc_binary)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  _trpc_common(${A_NAME})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
  _trpc_link_malloc(${A_NAME})
endfunction()

function(trpc_cc_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT;FIBER_ENV" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  _trpc_common(${A_NAME})
  # trpc_test_main (test/common/test_main.cc): gtest's main, exiting 77 when cases skipped for a
  # missing peer program, which ctest then reports as skipped, not passed.
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gmock trpc_test_main)
  _trpc_link_malloc(${A_NAME})
  # Sanitizer builds compile a test's own sources unoptimised: they build in about two thirds of
  # the time, every check still instruments them, and the code under test (the libraries,
  # examples and benchmark programs) keeps the mode's -O1.
  target_compile_options(${A_NAME} PRIVATE $<$<CONFIG:Asan,Tsan>:-O0>)
  # The third-party headers, precompiled once (test/CMakeLists.txt). With them precompiled,
  # GCC 12 no longer treats the standard library's inlined std::string copies as system code
  # and reports its known false -Warray-bounds and -Wstringop-* positives in them; the ASan build checks the
  # tests' bounds for real.
  if(TARGET trpc_test_main)
    target_precompile_headers(${A_NAME} REUSE_FROM trpc_test_main)
    target_compile_options(${A_NAME} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                                             -Wno-stringop-overread)
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  add_test(NAME ${A_NAME} COMMAND ${A_NAME})
  set(tests ${A_NAME})
  # FIBER_ENV VAR: the same binary again as ${NAME}_fiber, with VAR=fiber in its environment.
  if(A_FIBER_ENV)
    add_test(NAME ${A_NAME}_fiber COMMAND ${A_NAME})
    set_tests_properties(${A_NAME}_fiber PROPERTIES ENVIRONMENT ${A_FIBER_ENV}=fiber)
    list(APPEND tests ${A_NAME}_fiber)
  endif()
  set_tests_properties(${tests} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "${A_LABELS}"
                       SKIP_RETURN_CODE 77)
endfunction()

# trpc_missing_peer_test(NAME n WHY text): stands in for test n when a peer program it needs was
# not found at configure time: reported by ctest as skipped, or failed under CI=true, so a missing
# peer never passes quietly.
function(trpc_missing_peer_test)
  cmake_parse_arguments(A "" "NAME;WHY" "" ${ARGN})
  add_test(NAME ${A_NAME}
           COMMAND sh -c [[echo "peer missing: $1"; case "$CI" in true|1) exit 1;; esac; exit 77]]
                   sh "${A_WHY}")
  set_tests_properties(${A_NAME} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

function(trpc_cc_benchmark)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  _trpc_common(${A_NAME})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} benchmark::benchmark)
  _trpc_link_malloc(${A_NAME})
endfunction()

# Fuzz targets build as libFuzzer binaries under clang; under gcc they build against a small
# driver that replays the corpus, so the seed corpus always runs as a normal test.
function(trpc_cc_fuzz)
  cmake_parse_arguments(A "" "NAME;CORPUS" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  _trpc_common(${A_NAME})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND TRPC_FUZZ)
    target_compile_options(${A_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_options(${A_NAME} PRIVATE -fsanitize=fuzzer)
  else()
    target_sources(${A_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/test/fuzz/corpus_replay_main.cc)
  endif()
  if(A_CORPUS AND TRPC_BUILD_TESTS)
    add_test(NAME ${A_NAME}_corpus COMMAND ${A_NAME} ${A_CORPUS})
    set_tests_properties(${A_NAME}_corpus PROPERTIES TIMEOUT 120)
  endif()
endfunction()
