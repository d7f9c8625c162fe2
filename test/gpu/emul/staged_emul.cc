// src/kernels/staged.cu compiled for the CPU over the headers of this folder, run by
// staged_emul_test.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "staged.cu"
#pragma GCC diagnostic pop
