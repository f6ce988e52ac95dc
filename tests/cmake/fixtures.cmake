# fixtures.cmake: shared server fixtures for the tests.
#
# placeholder: the fixtures branch (issue 11 item 7) provides the real one; this
# stand-in keeps its interface so that tests/conformance builds on its own:
#
#   ik_fixture_require(TEST FIXTURE)   TEST needs the shared server FIXTURE (zk, ...)
#
# Here it does nothing: a test whose fixture is not shared starts its own server
# (tests/integration/zk.sh's zk_start_standalone does when IK_FIXTURE_ZK is unset).
function(ik_fixture_require test fixture)
endfunction()
