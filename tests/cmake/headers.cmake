# headers.cmake: the header lines of a test script, read by every suite that
# registers scripts (tests/CMakeLists.txt, tests/conformance/CMakeLists.txt).
#
# ik_test_header(SCRIPT KEY OUT): OUT = the words after "# KEY:" on the script's
# lines that begin so (KEY may hold a regex, e.g. "timeout\\.zk"); empty if none.
include_guard(GLOBAL)
function(ik_test_header script key out)
  file(STRINGS ${script} v REGEX "^# ${key}:")
  string(REGEX REPLACE "^# ${key}: *" "" v "${v}")
  separate_arguments(v)
  set(${out} "${v}" PARENT_SCOPE)
endfunction()
