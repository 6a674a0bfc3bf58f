# ctest driver: install Kolesky into the build tree, then build and run consumers against the
# installed package only (test_install/ and every example/NN_name; the examples run as their
# own ctest tests in the build tree). Each consumer is configured and built as a standalone
# project, as a user would; they are independent, so one driver project builds them side by
# side (ExternalProject, one per consumer) on all cores instead of one after another.
foreach(v SRC BIN PREFIX_PATH)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "RunInstallTest.cmake needs -D${v}=...")
  endif()
endforeach()
set(top ${BIN}/install_test)
set(inst ${top}/prefix)
file(REMOVE_RECURSE ${top})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BIN} --prefix ${inst})
file(GLOB examples RELATIVE ${SRC} ${SRC}/example/[0-9][0-9]_*)
list(SORT examples)
string(REPLACE ";" "|" prefixes "${inst};${PREFIX_PATH}")
set(driver "cmake_minimum_required(VERSION 3.16)\nproject(KoleskyConsumers NONE)\ninclude(ExternalProject)\n")
foreach(proj test_install ${examples})
  string(MAKE_C_IDENTIFIER ${proj} id)
  string(APPEND driver "ExternalProject_Add(${id} SOURCE_DIR ${SRC}/${proj} BINARY_DIR ${top}/${id}
  LIST_SEPARATOR | CMAKE_ARGS -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefixes}
  INSTALL_COMMAND \"\" BUILD_ALWAYS ON)\n")
endforeach()
file(WRITE ${top}/driver/CMakeLists.txt "${driver}")
cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
run(${CMAKE_COMMAND} -S ${top}/driver -B ${top}/driver/build)
run(${CMAKE_COMMAND} --build ${top}/driver/build --parallel ${cores})
run(${top}/test_install/install_test)
run(${top}/example_01_quickstart/01_quickstart 300)
