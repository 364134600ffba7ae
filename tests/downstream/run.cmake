# The test Downstream.InstalledPackage (tests/CMakeLists.txt): installs the build tree's
# library and CLI into a prefix inside WORK_DIR, builds tests/downstream against it with
# find_package, converts the sample matrix with the installed CLI (csr, then hyb added) and
# runs the example on the container. Nothing is written outside WORK_DIR: the HDF5 plugin,
# whose install path is HDF5's own plugin directory, is not installed.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DCXX_COMPILER=...
#         -DBUILD_TYPE=... [-DSANITIZE_FLAGS=...] -P run.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command and stops the test with its output when it fails.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

foreach(component library cli)
  step("install ${component}" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" --component ${component})
endforeach()

set(configure "${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/downstream" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(BUILD_TYPE)
  list(APPEND configure "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
# A library built with sanitizers needs their runtimes in the program that links it.
if(SANITIZE_FLAGS)
  list(APPEND configure "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}")
endif()
step("configure tests/downstream" ${configure})
# The package found must be the one just installed, not another spconv on the system.
file(STRINGS "${build}/CMakeCache.txt" found REGEX "^spconv_DIR:")
string(REGEX REPLACE "^[^=]*=" "" found "${found}")
file(REAL_PATH "${found}" found)
file(REAL_PATH "${prefix}" real_prefix)
string(FIND "${found}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "find_package(spconv) used ${found}, not the package installed in ${prefix}")
endif()
step("build tests/downstream" "${CMAKE_COMMAND}" --build "${build}" --parallel 2)

set(container "${WORK_DIR}/poisson2d_40.h5")
step("spconv --to csr" "${prefix}/bin/spconv" "${SOURCE_DIR}/tests/data/poisson2d_40.mtx" --to csr "${container}")
step("spconv --to hyb --add" "${prefix}/bin/spconv" "${container}" --to hyb --add "${container}")
step("run the downstream example" "${build}/downstream" "${container}")
message(STATUS "${step_output}")
