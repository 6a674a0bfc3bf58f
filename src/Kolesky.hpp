// Kolesky: dense Cholesky and LU on Kokkos. The one header users include.
#pragma once
#include "Kolesky_Config.hpp"
#include "batched/Kolesky_Batch.hpp"
#include "batched/Kolesky_BatchedPotrf.hpp"
#include "common/Kolesky_Error.hpp"
#include "common/Kolesky_Flops.hpp"
#include "common/Kolesky_Types.hpp"
#include "dense/Kolesky_Potrf_Device.hpp"
#include "host/Kolesky_Potrf.hpp"
#include "host/Kolesky_PosvMixed.hpp"
