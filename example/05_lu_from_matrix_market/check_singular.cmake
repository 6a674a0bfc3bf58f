# ctest driver: the example must report a singular matrix and exit with status 3.
#   cmake -DEXE=<05_lu_from_matrix_market> -DFILE=<matrix.mtx> -P check_singular.cmake
execute_process(COMMAND ${EXE} ${FILE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 3 OR NOT out MATCHES "singular: info = [1-9]")
  message(FATAL_ERROR "expected a singular matrix (exit status 3), got exit status ${rc}")
endif()
