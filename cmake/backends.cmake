# backends.cmake: the optional store backends, one ik_backend() line each at the end of
# this file (included by CMakeLists.txt; docs/architecture.md, "Adding a backend").
#
# ik_backend(NAME SCHEME SOURCES <regex> FIXTURE <fixture> [UNIT_TESTS <regex>]
#            [PKG <pkg-config module>] [LIB <library> <header>] [PC_LIBS <flag>...]
#            [DEFINES <definition>...] [DEPS <target>...] [PC_REQUIRES <module>...])
#
# Each backend NAME gets a cache option IK_WITH_<NAME> (default ON). When it is on:
#   - its client library is found: PKG names a pkg-config module; LIB a library and
#     one of its headers, for a client that ships no .pc file;
#   - the library and its users are compiled with IK_HAVE_<NAME> and DEFINES, and
#     linked with the client library and DEPS;
#   - idkeeper.pc names it for static links: the PKG module in Requires.private, or
#     PC_LIBS (default: -l<library> for LIB) in Libs.private; PC_REQUIRES names the
#     modules of DEPS;
#   - the conformance suite runs on SCHEME, with the shared server of FIXTURE
#     (tests/fixtures/FIXTURE.sh).
# When it is off, the files of src/lib whose names (without .c) match SOURCES, and
# those of tests/unit matching UNIT_TESTS, are left out of the build.
#
# Results, read by CMakeLists.txt and tests/conformance/CMakeLists.txt:
#   IK_LIB_EXCLUDE         source regexes of the backends that are off
#   IK_UNIT_EXCLUDE        their unit tests' regexes
#   IK_BACKEND_DEFS        compile definitions (PUBLIC on the library)
#   IK_BACKEND_INCLUDES    client include directories (PRIVATE, as system headers)
#   IK_BACKEND_DEPS        what the library links with
#   IK_PC_REQUIRES_PRIVATE, IK_PC_LIBS_PRIVATE   idkeeper.pc's static-link lines
#   IK_BACKEND_SCHEMES     the conformance backends; IK_CONFORMANCE_FIXTURE_<SCHEME>
set(IK_LIB_EXCLUDE "")
set(IK_UNIT_EXCLUDE "")
set(IK_BACKEND_DEFS "")
set(IK_BACKEND_INCLUDES "")
set(IK_BACKEND_DEPS "")
set(IK_BACKEND_SCHEMES "")

function(ik_backend name)
  cmake_parse_arguments(B "" "SCHEME;SOURCES;FIXTURE;PKG;UNIT_TESTS" "LIB;PC_LIBS;DEFINES;DEPS;PC_REQUIRES" ${ARGN})
  option(IK_WITH_${name} "Build the ${B_SCHEME}:// backend" ON)
  if(NOT IK_WITH_${name})
    list(APPEND IK_LIB_EXCLUDE "/(${B_SOURCES})\\.c$")
    set(IK_LIB_EXCLUDE "${IK_LIB_EXCLUDE}" PARENT_SCOPE)
    if(B_UNIT_TESTS)
      list(APPEND IK_UNIT_EXCLUDE "/(${B_UNIT_TESTS})\\.c$")
      set(IK_UNIT_EXCLUDE "${IK_UNIT_EXCLUDE}" PARENT_SCOPE)
    endif()
    return()
  endif()
  set(defs IK_HAVE_${name} ${B_DEFINES})
  set(deps ${B_DEPS})
  set(pc_libs ${B_PC_LIBS})
  if(B_PKG)
    pkg_check_modules(IK_CLIENT_${name} REQUIRED IMPORTED_TARGET ${B_PKG})
    list(APPEND deps PkgConfig::IK_CLIENT_${name})
    set(incs ${IK_CLIENT_${name}_INCLUDE_DIRS})
    if(NOT pc_libs)
      string(APPEND IK_PC_REQUIRES_PRIVATE " ${B_PKG}")
    endif()
  else()
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
            IK_PC_REQUIRES_PRIVATE IK_PC_LIBS_PRIVATE)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
  set(IK_CONFORMANCE_FIXTURE_${B_SCHEME} ${B_FIXTURE} PARENT_SCOPE)
endfunction()

# ZooKeeper: THREADED selects the client's multithreaded API; libcrypto is for the
# SHA-1 of digest ACLs. libpq's .pc names static libraries Debian does not ship
# (-lpgcommon -lpgport), so a static link takes the shared libpq through -lpq.
ik_backend(ZK SCHEME zk SOURCES "backend_zk.*|zk_.*" FIXTURE zk UNIT_TESTS "test_zk_.*"
  LIB zookeeper_mt zookeeper/zookeeper.h DEFINES THREADED DEPS PkgConfig::CRYPTO PC_REQUIRES libcrypto)
ik_backend(REDIS SCHEME redis SOURCES "backend_redis.*|redis_.*" FIXTURE redis PKG hiredis)
ik_backend(PG SCHEME postgresql SOURCES "backend_pg" FIXTURE postgres PKG libpq PC_LIBS -lpq)
ik_backend(MYSQL SCHEME mysql SOURCES "backend_mysql.*|mysql_.*" FIXTURE mariadb PKG libmariadb
  UNIT_TESTS "test_mysql_.*")
