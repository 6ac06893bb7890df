# qopt_add_pass_plugin(<target> SOURCES <files>... [LIBS <libs>...]
#                      [OUTPUT_NAME <name>] [OUTPUT_DIRECTORY <dir>])
#
# Builds a qopt pass module: a shared library (no "lib" prefix: <name>.so) exporting only
# qoptGetPassPluginInfo (see qopt/pass/PassPlugin.h). It links qopt::qopt and nothing else of qopt;
# the ONNX protobuf code stays in libqopt. Load it with `qopt --load-pass-plugin=<name>.so` or by
# listing its folder in QOPT_PLUGIN_PATH.
function(qopt_add_pass_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME;OUTPUT_DIRECTORY" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "qopt_add_pass_plugin(${target}): SOURCES is required")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE qopt::qopt ${ARG_LIBS})
  if(NOT ARG_OUTPUT_NAME)
    set(ARG_OUTPUT_NAME ${target})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${ARG_OUTPUT_NAME}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  if(COMMAND qopt_target_warnings)
    qopt_target_warnings(${target})
  endif()
endfunction()
