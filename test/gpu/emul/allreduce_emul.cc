// The launchers of src/kernels' collectives (allreduce.cu, collectives.cu) compiled for the
// CPU over the headers of this folder (see cuda_emul_prelude.h); their kernels are in
// reduce_coll_emul.cc and move_emul.cc.  Run by team_emul_test.
#include "allreduce.cu"
#include "collectives.cu"
