# trpc_proto_library(NAME n PROTOS a.proto ... [DEPS lib ...] [IMPORT_DIRS dir ...]
#                    [OPTIONS opt ...])
#
# One static library from .proto files: protoc's foo.pb.cc and protoc-gen-trpc's foo.trpc.pb.cc
# for each, linked to protobuf, to DEPS and, when the files define services, to the framework
# libraries the generated code calls (trpc::trpc_server, trpc::trpc_client). Programs link
# trpc::trpc as well: it adds the protocol plug-ins, which must be linked whole exactly once per
# program, so a library does not pull them in (two whole copies do not link).
#
# The same file serves the framework's own build (the trpc:: names are aliases of its targets)
# and installed packages (find_package(trpc) imports the targets under those names), so the
# function body has no "where am I" branches. docs/install.md has the long form.
#
# Paths: a proto's name is its path relative to PROJECT_SOURCE_DIR, and its outputs mirror it
# under PROJECT_BINARY_DIR:
#   ${PROJECT_SOURCE_DIR}/x/y/foo.proto  ->  ${PROJECT_BINARY_DIR}/x/y/foo{.pb,.trpc.pb}.{h,cc}
# so code includes "x/y/foo.trpc.pb.h" and other protos `import "x/y/foo.proto"`. Protos of
# proto libraries in DEPS can be imported that way too (their roots are searched); IMPORT_DIRS
# adds further roots for imports only (their files must be compiled by some other library).
#
# OPTIONS go to protoc-gen-trpc (--trpc_out=opt1,opt2:DIR). The one it knows: skip_streaming
# (streaming methods are left out of the generated code instead of failing the build).

include_guard(GLOBAL)

# True in *out if the proto file defines a service. Decided at configure time (a service
# library links the framework, a messages-only one must not: the framework's own trpc.proto is
# one), so a .proto edit re-runs the configure step.
function(_trpc_proto_has_service file out)
  file(READ "${file}" text)
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " text "${text}")
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")
  if(text MATCHES "(^|[;{}\n])[ \t\r\n]*service[ \t\r\n]+[A-Za-z_]")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

function(trpc_proto_library)
  cmake_parse_arguments(A "" "NAME" "PROTOS;DEPS;IMPORT_DIRS;OPTIONS" ${ARGN})
  if(NOT A_NAME OR NOT A_PROTOS)
    message(FATAL_ERROR "trpc_proto_library: NAME and PROTOS are required")
  endif()
  set(root "${PROJECT_SOURCE_DIR}")
  set(out_root "${PROJECT_BINARY_DIR}")

  # protoc's search path: our root first, so our files are named relative to it.
  set(import_dirs "${root}")
  # Every proto this library's commands read, for rebuilds when an imported file changes.
  set(proto_files)
  foreach(dep ${A_DEPS})
    if(TARGET ${dep})
      get_target_property(dep_dirs ${dep} TRPC_PROTO_IMPORT_DIRS)
      get_target_property(dep_files ${dep} TRPC_PROTO_FILES)
      if(dep_dirs)
        list(APPEND import_dirs ${dep_dirs})
        list(APPEND proto_files ${dep_files})
      endif()
    endif()
  endforeach()
  foreach(d ${A_IMPORT_DIRS})
    get_filename_component(d "${d}" ABSOLUTE)
    list(APPEND import_dirs "${d}")
  endforeach()
  list(REMOVE_DUPLICATES import_dirs)
  set(import_args)
  foreach(d ${import_dirs})
    list(APPEND import_args "-I${d}")
  endforeach()

  set(abs_protos)
  set(srcs)
  set(outputs)
  set(has_service FALSE)
  foreach(p ${A_PROTOS})
    get_filename_component(abs "${p}" ABSOLUTE)
    file(RELATIVE_PATH rel "${root}" "${abs}")
    if(rel MATCHES "^\\.\\./")
      message(FATAL_ERROR "trpc_proto_library(${A_NAME}): ${abs} is not under ${root}")
    endif()
    string(REGEX REPLACE "\\.proto$" "" base "${rel}")
    list(APPEND abs_protos "${abs}")
    list(APPEND srcs "${out_root}/${base}.pb.cc" "${out_root}/${base}.trpc.pb.cc")
    list(APPEND outputs "${out_root}/${base}.pb.cc" "${out_root}/${base}.pb.h"
         "${out_root}/${base}.trpc.pb.cc" "${out_root}/${base}.trpc.pb.h")
    _trpc_proto_has_service("${abs}" file_has_service)
    if(file_has_service)
      set(has_service TRUE)
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${abs}")
  endforeach()
  list(APPEND proto_files ${abs_protos})

  # The plug-in's options, comma-separated before the output folder.
  set(trpc_out "${out_root}")
  if(A_OPTIONS)
    list(JOIN A_OPTIONS "," plugin_options)
    set(trpc_out "${plugin_options}:${out_root}")
  endif()

  # One protoc run for the whole library, both generators at once.
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND protobuf::protoc
            "--plugin=protoc-gen-trpc=$<TARGET_FILE:trpc::protoc-gen-trpc>"
            "--cpp_out=${out_root}" "--trpc_out=${trpc_out}" ${import_args} ${abs_protos}
    DEPENDS ${proto_files} protobuf::protoc trpc::protoc-gen-trpc
    COMMENT "protoc + protoc-gen-trpc: ${A_NAME}"
    VERBATIM)

  add_library(${A_NAME} ${srcs})
  # TRPC_GENERATED_CODE_OPTIONS: compile options for generated code only, when the including
  # project sets it (ours builds generated code at -O0 in its sanitizer modes).
  target_compile_options(${A_NAME} PRIVATE ${TRPC_GENERATED_CODE_OPTIONS})
  target_include_directories(${A_NAME} PUBLIC
    $<BUILD_INTERFACE:${out_root}> $<BUILD_INTERFACE:${root}>)
  target_link_libraries(${A_NAME} PUBLIC protobuf::libprotobuf ${A_DEPS})
  if(has_service)
    target_link_libraries(${A_NAME} PUBLIC trpc::trpc_server trpc::trpc_client)
  endif()
  set_target_properties(${A_NAME} PROPERTIES
    TRPC_PROTO_IMPORT_DIRS "${import_dirs}"
    TRPC_PROTO_FILES "${proto_files}")
endfunction()
