# backends.cmake: the optional store backends, one ik_backend() line each at the end of
# this file (included by CMakeLists.txt; docs/architecture.md, "Adding a backend").
#
# ik_backend(NAME SCHEME <scheme> DIRS <folder>... [FIXTURE <fixture>] [TESTS <regex>]
#            [PKG <pkg-config module>] [LIB <library> <header>] [PC_LIBS <flag>...]
#            [DEFINES <definition>...] [DEPS <target>...] [PC_REQUIRES <module>...]
#            [OPS <ops>...] [TITLE <name>] [MORE_SCHEMES <scheme>...])
#
# The registry (src/lib/coord.c) takes its list from these lines: a backend that is
# on puts its ops tables, ik__backend_OPS_ops (OPS, default: NAME in lower case), in
# the registry in this file's order; one that is off gets its schemes (SCHEME and
# MORE_SCHEMES) a clear "this build has no TITLE backend" (TITLE, default NAME).
#
# Each backend NAME gets a cache option IK_WITH_<NAME> (default IK_BACKENDS_DEFAULT:
# ON), the one switch
# that builds it or not. DIRS are its folders under src/lib/backends/: its own, and
# a shared layer it is built on (backends/sql, under both SQL drivers). A folder is
# built when one backend naming it is on, and left out whole otherwise: no file of
# it is compiled, and no file of it holds an #ifdef around its whole text. When the
# backend is on:
#   - its client library is found: PKG names a pkg-config module; LIB a library and
#     one of its headers, for a client that ships no .pc file; neither, for a
#     backend without one;
#   - the library and its users are compiled with IK_HAVE_<NAME> and DEFINES, and
#     linked with the client library and DEPS;
#   - idkeeper.pc names it for static links: the PKG module in Requires.private, or
#     PC_LIBS (default: -l<library> for LIB) in Libs.private; PC_REQUIRES names the
#     modules of DEPS;
#   - the conformance suite runs on SCHEME, with the shared server of FIXTURE
#     (tests/fixtures/FIXTURE.sh; none for a store without a server), through
#     tests/conformance/stores/SCHEME.sh.
# TESTS: the unit tests and fuzz drivers (file names without .c under tests/unit and
# tests/fuzz) that need the backend's folders; like the folders, they are left out
# when no backend naming them is on. An integration test needs a backend by its
# name (t_FOLDER_*.sh, FOLDER the backend's own folder: t_zk_outage.sh), its
# fixture ("# fixtures: zk"), its variant (".zk") or a header "# needs: SCHEME".
#
# Results, read by CMakeLists.txt, tests/CMakeLists.txt and
# tests/conformance/CMakeLists.txt (after ik_backends_done):
#   IK_BACKEND_DIRS        the folders of src/lib/backends/ this build compiles
#   IK_TEST_EXCLUDE        regexes of the tests it leaves out
#   IK_BACKEND_DEFS        compile definitions (PUBLIC on the library)
#   IK_BACKEND_INCLUDES    client include directories (PRIVATE, as system headers)
#   IK_BACKEND_DEPS        what the library links with
#   IK_PC_REQUIRES_PRIVATE, IK_PC_LIBS_PRIVATE   idkeeper.pc's static-link lines
#   IK_BACKEND_SCHEMES     the conformance backends; IK_CONFORMANCE_FIXTURE_<SCHEME>
#   IK_BACKENDS_OFF        "SCHEME FIXTURE FOLDER" of each backend that is off: the
#                          integration tests that need one are not registered
#                          (tests/CMakeLists.txt, ik_needs_off)
# and ${CMAKE_BINARY_DIR}/ik_backends.txt, one line per backend, on or off:
# "NAME ON|OFF DIR...", for the test structure (tests/tools/folders.py).
set(IK_BACKEND_DIRS local) # local: is in every build (SQLite is not optional)
set(IK_BACKENDS_OFF "")
set(IK_TESTS_ON "")
set(IK_TESTS_OFF "")
set(IK_BACKEND_DEFS "")
set(IK_BACKEND_INCLUDES "")
set(IK_BACKEND_DEPS "")
set(IK_BACKEND_SCHEMES "")
set(IK_REGISTRY_ON "")
set(IK_REGISTRY_OFF "")
file(WRITE ${CMAKE_BINARY_DIR}/ik_backends.txt "LOCAL ON local\n")

# The default of every switch: -DIK_BACKENDS_DEFAULT=OFF builds local: alone (the
# Makefile's tsan-mt), without naming each backend; a switch given still wins.
option(IK_BACKENDS_DEFAULT "Default of each IK_WITH_NAME switch" ON)

function(ik_backend name)
  cmake_parse_arguments(B "" "SCHEME;FIXTURE;PKG;TITLE"
    "DIRS;TESTS;LIB;PC_LIBS;DEFINES;DEPS;PC_REQUIRES;OPS;MORE_SCHEMES" ${ARGN})
  if(B_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ik_backend(${name}): unknown arguments ${B_UNPARSED_ARGUMENTS}")
  endif()
  option(IK_WITH_${name} "Build the ${B_SCHEME}:// backend" ${IK_BACKENDS_DEFAULT})
  string(JOIN " " dirs ${B_DIRS})
  # the registry's lines (ik_backends.h): its ops tables, or its schemes left out
  string(TOLOWER ${name} lower)
  if(NOT B_OPS)
    set(B_OPS ${lower})
  endif()
  if(NOT B_TITLE)
    set(B_TITLE ${name})
  endif()
  if(NOT IK_WITH_${name})
    foreach(s ${B_SCHEME} ${B_MORE_SCHEMES})
      string(APPEND IK_REGISTRY_OFF " X(\"${s}\", \"${B_TITLE}\")")
    endforeach()
    set(IK_REGISTRY_OFF "${IK_REGISTRY_OFF}" PARENT_SCOPE)
    file(APPEND ${CMAKE_BINARY_DIR}/ik_backends.txt "${name} OFF ${dirs}\n")
    list(GET B_DIRS 0 own)
    list(APPEND IK_TESTS_OFF ${B_TESTS})
    set(fixture ${B_FIXTURE})
    if(NOT fixture)
      set(fixture -)
    endif()
    list(APPEND IK_BACKENDS_OFF "${B_SCHEME} ${fixture} ${own}")
    set(IK_TESTS_OFF "${IK_TESTS_OFF}" PARENT_SCOPE)
    set(IK_BACKENDS_OFF "${IK_BACKENDS_OFF}" PARENT_SCOPE)
    return()
  endif()
  file(APPEND ${CMAKE_BINARY_DIR}/ik_backends.txt "${name} ON ${dirs}\n")
  foreach(o ${B_OPS})
    string(APPEND IK_REGISTRY_ON " X(${o})")
  endforeach()
  set(IK_REGISTRY_ON "${IK_REGISTRY_ON}" PARENT_SCOPE)
  list(APPEND IK_BACKEND_DIRS ${B_DIRS})
  list(APPEND IK_TESTS_ON ${B_TESTS})
  set(defs IK_HAVE_${name} ${B_DEFINES})
  set(deps ${B_DEPS})
  set(pc_libs ${B_PC_LIBS})
  set(incs "")
  if(B_PKG)
    pkg_check_modules(IK_CLIENT_${name} REQUIRED IMPORTED_TARGET ${B_PKG})
    list(APPEND deps PkgConfig::IK_CLIENT_${name})
    set(incs ${IK_CLIENT_${name}_INCLUDE_DIRS})
    if(NOT pc_libs)
      string(APPEND IK_PC_REQUIRES_PRIVATE " ${B_PKG}")
    endif()
  elseif(B_LIB)
    list(GET B_LIB 0 lib)
    list(GET B_LIB 1 header)
    find_path(IK_CLIENT_${name}_INCLUDE ${header} REQUIRED)
    find_library(IK_CLIENT_${name}_LIB ${lib} REQUIRED)
    list(APPEND deps ${IK_CLIENT_${name}_LIB})
    set(incs ${IK_CLIENT_${name}_INCLUDE})
    if(NOT pc_libs)
      set(pc_libs -l${lib})
    endif()
  endif()
  foreach(f ${pc_libs})
    string(APPEND IK_PC_LIBS_PRIVATE " ${f}")
  endforeach()
  foreach(m ${B_PC_REQUIRES})
    string(APPEND IK_PC_REQUIRES_PRIVATE " ${m}")
  endforeach()
  list(APPEND IK_BACKEND_DEFS ${defs})
  list(APPEND IK_BACKEND_INCLUDES ${incs})
  list(APPEND IK_BACKEND_DEPS ${deps})
  list(APPEND IK_BACKEND_SCHEMES ${B_SCHEME})
  foreach(v IK_BACKEND_DEFS IK_BACKEND_INCLUDES IK_BACKEND_DEPS IK_BACKEND_SCHEMES
            IK_PC_REQUIRES_PRIVATE IK_PC_LIBS_PRIVATE IK_BACKEND_DIRS IK_TESTS_ON)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
  set(IK_CONFORMANCE_FIXTURE_${B_SCHEME} ${B_FIXTURE} PARENT_SCOPE)
endfunction()


# ik_backends_done(): after the last ik_backend line: the folders and tests of the
# backends that are off, less those a backend that is on needs too; and the
# registry's list, ${CMAKE_BINARY_DIR}/ik_backends.h, which src/lib/coord.c includes:
#   IK__BACKENDS_ON(X)   X(OPS) for each ops table ik__backend_OPS_ops built, in order
#   IK__BACKENDS_OFF(X)  X("SCHEME", "TITLE") for each scheme this build leaves out
macro(ik_backends_done)
  file(WRITE ${CMAKE_BINARY_DIR}/ik_backends.h.new
    "/* ik_backends.h: the backends of this build, written by cmake/backends.cmake\n"
    " * from its ik_backend() lines, for the registry (src/lib/coord.c). */\n"
    "#define IK__BACKENDS_ON(X)${IK_REGISTRY_ON}\n"
    "#define IK__BACKENDS_OFF(X)${IK_REGISTRY_OFF}\n")
  configure_file(${CMAKE_BINARY_DIR}/ik_backends.h.new ${CMAKE_BINARY_DIR}/ik_backends.h COPYONLY)
  list(REMOVE_DUPLICATES IK_BACKEND_DIRS)
  set(IK_TEST_EXCLUDE "")
  foreach(t ${IK_TESTS_OFF})
    list(FIND IK_TESTS_ON "${t}" on)
    if(on EQUAL -1)
      list(APPEND IK_TEST_EXCLUDE "/(${t})\\.c$")
    endif()
  endforeach()
endmacro()

# ZooKeeper: THREADED selects the client's multithreaded API; libcrypto is for the
# SHA-1 of digest ACLs. libpq's .pc names static libraries Debian does not ship
# (-lpgcommon -lpgport), so a static link takes the shared libpq through -lpq.
ik_backend(ZK SCHEME zk TITLE ZooKeeper DIRS zk FIXTURE zk
  TESTS "test_zk_.*|test_recipe_names|fuzz_zk_leaf"
  LIB zookeeper_mt zookeeper/zookeeper.h DEFINES THREADED DEPS PkgConfig::CRYPTO PC_REQUIRES libcrypto)
ik_backend(REDIS SCHEME redis MORE_SCHEMES redis+unix OPS redis redis_unix TITLE Redis DIRS redis
  FIXTURE redis TESTS "fuzz_redis_uri" PKG hiredis)
ik_backend(PG SCHEME postgresql TITLE PostgreSQL DIRS pg sql FIXTURE postgres TESTS "fuzz_sql_uri"
  PKG libpq PC_LIBS -lpq)
ik_backend(MYSQL SCHEME mysql TITLE MySQL DIRS mysql sql FIXTURE mariadb PKG libmariadb
  TESTS "test_mysql_.*" "fuzz_sql_uri")
# etcd: its v3 JSON gateway over libcurl, the answers read with jansson (etcd_gateway.c).
# libcurl's .pc names, for a static link, libraries whose -dev packages Debian's
# libcurl4-openssl-dev does not pull in (libssh2, libpsl, ldap...): a static link of
# libidkeeper takes the shared libcurl through -lcurl, as for libpq.
ik_backend(ETCD SCHEME etcd MORE_SCHEMES etcds OPS etcd etcds TITLE etcd DIRS etcd FIXTURE etcd
  TESTS "fuzz_etcd_.*" PKG libcurl PC_LIBS -lcurl DEPS PkgConfig::JANSSON PC_REQUIRES jansson)
ik_backends_done()
