# fixtures.cmake: shared servers for the tests, as CTest fixtures.
#
# A fixture NAME is a server that many tests share during one test stage (one per
# build directory), started once before the first test that needs it and stopped
# after the last, pass or fail. Each is one script, tests/fixtures/NAME.sh:
#
#   NAME.sh start DIR   starts the server, state in DIR (inside the build directory),
#                       detached from CTest; waits until it serves; writes DIR/env,
#                       shell assignments (VAR=value lines) the tests source. Exits
#                       non-zero, saying why, if the server does not serve: CTest
#                       then runs none of the tests that require the fixture and
#                       reports them as not run (make test fails).
#   NAME.sh stop DIR    stops it (CTest runs this even when tests failed).
#
# Each becomes two tests, fixture/NAME.start (FIXTURES_SETUP NAME) and
# fixture/NAME.stop (FIXTURES_CLEANUP NAME), run with IK_SRC and IK_BUILD set.
# `ik_fixture_require(TEST NAME...)` makes TEST require each NAME (FIXTURES_REQUIRED)
# and gives it IK_FIXTURE_<NAME> (upper case: IK_FIXTURE_ZK) = that DIR. An
# integration script asks for them in its header: "# fixtures: zk" (a space-separated
# list), or "# fixtures.VARIANT: zk" for one variant only (tests/CMakeLists.txt).
# `ctest -R TEST` runs the fixture's start and stop around TEST by itself.
#
# A new server plugs in with no change here: write tests/fixtures/NAME.sh with start
# and stop as above on tests/fixtures/common.sh (the free loopback port, the watchdog,
# DIR/env written last, the stop that fails if the server died: the script says only
# how its server starts, answers and stops; tests/fixtures/README), then name it in
# the tests' headers ("# fixtures: NAME") or in ik_fixture_require(). The tests read
# DIR/env and give themselves a namespace of their own on the shared server (a
# database, a key prefix; ZooKeeper's is a chroot, tests/integration/zk.sh).
#
# Call ik_fixture_require from the directory that added TEST (CMake sets test
# properties only there).

# State directories: ${CMAKE_BINARY_DIR}/fixtures/NAME (the top build directory, the
# same from every CMakeLists that calls these; include this file from any of them).
# ik_fixture_define(NAME): the start and stop tests of fixture NAME, once per build.
function(ik_fixture_define name)
  get_property(done GLOBAL PROPERTY IK_FIXTURES_DEFINED)
  if(name IN_LIST done)
    return()
  endif()
  set(script ${CMAKE_SOURCE_DIR}/tests/fixtures/${name}.sh)
  if(NOT EXISTS ${script})
    message(FATAL_ERROR "fixture '${name}': no ${script} (tests/cmake/fixtures.cmake says what it must do)")
  endif()
  set(dir ${CMAKE_BINARY_DIR}/fixtures/${name})
  set(env "IK_SRC=${CMAKE_SOURCE_DIR};IK_BUILD=${CMAKE_BINARY_DIR}")
  add_test(NAME fixture/${name}.start COMMAND bash ${script} start ${dir})
  set_tests_properties(fixture/${name}.start PROPERTIES
    FIXTURES_SETUP ${name} LABELS "fixture" TIMEOUT 400 ENVIRONMENT "${env}")
  add_test(NAME fixture/${name}.stop COMMAND bash ${script} stop ${dir})
  set_tests_properties(fixture/${name}.stop PROPERTIES
    FIXTURES_CLEANUP ${name} LABELS "fixture" TIMEOUT 120 ENVIRONMENT "${env}")
  set_property(GLOBAL APPEND PROPERTY IK_FIXTURES_DEFINED ${name})
endfunction()

# ik_fixture_require(TEST NAME...): TEST runs while the fixtures NAME... serve, with
# IK_FIXTURE_<NAME>=their state directory in its environment.
function(ik_fixture_require test)
  foreach(name ${ARGN})
    if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
      message(FATAL_ERROR "fixture name '${name}' (of ${test}): lower-case letters, digits, _")
    endif()
    ik_fixture_define(${name})
    string(TOUPPER ${name} up)
    set_property(TEST ${test} APPEND PROPERTY FIXTURES_REQUIRED ${name})
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT "IK_FIXTURE_${up}=${CMAKE_BINARY_DIR}/fixtures/${name}")
  endforeach()
endfunction()

# ik_order_by_cost(TEST): TEST starts in the order of its COST among the scripts.
# CTest starts the tests that others depend on first (a fixture's setup; then the
# tests that require a fixture, since its cleanup waits for them) and only then the
# rest, each group in the order of COST. A long script with no fixture (t_chaos,
# t_zk_outage) then started after every fixture user, minutes into a stage, and made
# its tail. Every script requires one more fixture, `order`, whose only test is the
# no-op cleanup order/last: all of them are then one group, ordered by COST alone.
function(ik_order_by_cost test)
  get_property(done GLOBAL PROPERTY IK_ORDER_DEFINED)
  if(NOT done)
    add_test(NAME order/last COMMAND ${CMAKE_COMMAND} -E true)
    set_tests_properties(order/last PROPERTIES FIXTURES_CLEANUP order LABELS "fixture" TIMEOUT 30)
    set_property(GLOBAL PROPERTY IK_ORDER_DEFINED TRUE)
  endif()
  set_property(TEST ${test} APPEND PROPERTY FIXTURES_REQUIRED order)
endfunction()
