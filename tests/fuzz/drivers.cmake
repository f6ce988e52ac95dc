# ik_add_fuzz_driver(NAME SRC LIBFUZZER): one fuzz driver. A driver names the
# product sources it needs beyond libidkeeper in a line
#   /* fuzz-sources: src/cli/options.c src/cli/output.c */
# With LIBFUZZER it links libFuzzer (clang, `make fuzz`); without it, it links
# replay.c and becomes a regression test over its corpus (every build).
function(ik_add_fuzz_driver name src libfuzzer)
  file(STRINGS ${src} extra REGEX "fuzz-sources:")
  string(REGEX REPLACE ".*fuzz-sources: *([^*]*)\\*/.*" "\\1" extra "${extra}")
  separate_arguments(extra)
  set(srcs ${src})
  foreach(e ${extra})
    list(APPEND srcs ${CMAKE_SOURCE_DIR}/${e})
  endforeach()
  if(libfuzzer)
    add_executable(${name} ${srcs})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    add_executable(${name}_replay ${srcs} ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c)
    set(name ${name}_replay)
  endif()
  target_include_directories(${name} PRIVATE ${IK_LIB_INCLUDES} ${IK_SERVER_INCLUDES}
    ${CMAKE_SOURCE_DIR}/src/cli ${HTTP_PARSER_INCLUDE})
  target_link_libraries(${name} PRIVATE idkeeper_static ${HTTP_PARSER_LIB} PkgConfig::INIH PkgConfig::UV
    PkgConfig::JANSSON PkgConfig::CRYPTO m)
endfunction()
