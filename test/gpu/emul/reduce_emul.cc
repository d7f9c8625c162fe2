// src/kernels/reduce.cu compiled for the CPU over the headers of this folder (see
// cuda_emul_prelude.h): the real launchers and primitives, run by kernel_emul_test.
#include "reduce.cu"
