# How Kolesky's tests, benchmarks and examples start MPI programs (also installed, for the
# examples built against the package). After find_package(MPI):
#
#   kolesky_add_mpi_test(NAME ranks program [args...])
#
# runs `mpiexec -n ranks` with, for Open MPI only, --oversubscribe (the 4-rank tests on a 2-core
# machine) and --allow-run-as-root (CI runs as root), one OpenMP thread per rank and no
# thread binding.
if(NOT DEFINED KOLESKY_MPIEXEC_PREFLAGS)
  set(KOLESKY_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
  if(MPIEXEC_EXECUTABLE)
    execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _kolesky_v
      ERROR_VARIABLE _kolesky_v RESULT_VARIABLE _kolesky_rc)
    if(_kolesky_v MATCHES "Open MPI|OpenRTE|open-mpi")
      list(APPEND KOLESKY_MPIEXEC_PREFLAGS --oversubscribe --allow-run-as-root)
    endif()
  endif()
endif()

function(kolesky_add_mpi_test name ranks)
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks}
    ${KOLESKY_MPIEXEC_PREFLAGS} ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "OMP_NUM_THREADS=1;OMP_PROC_BIND=false"
    PROCESSORS ${ranks} TIMEOUT 600)
endfunction()
