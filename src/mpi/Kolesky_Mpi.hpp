// Kolesky over MPI (built with -DKolesky_ENABLE_MPI=ON; link Kolesky::mpi): batches spread over
// ranks and GPUs (kolesky::mpi::batched), one large matrix through ScaLAPACK (kolesky::mpi::Grid,
// Descriptor, potrf / potrs / posv, scatter / gather), the rank -> GPU mapping.
#pragma once
#include "Kolesky.hpp"
#include "mpi/Kolesky_MpiBatched.hpp"
#include "mpi/Kolesky_MpiCommon.hpp"
#include "mpi/Kolesky_Scalapack.hpp"
