/* Open MPI 4.1 glue (coll framework 2.0.0, module 2.3.0): the component, its MCA parameters,
 * its output stream, the module and the fallback to the module below us.  Everything else is
 * in the C++ logic behind coll_cohort.h.  Built against the installed Open MPI's development
 * headers, with hidden visibility: the component structure is the one symbol it exports. */
#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/coll.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#include "coll_cohort.h"

#if OMPI_MAJOR_VERSION != 4 || OMPI_MINOR_VERSION < 1
#error "this glue is for Open MPI 4.1 (coll API 2.0.0)"
#endif

/* The collectives we offer, each with the function and module we fall back to. */
#define COHORT_FOR_EACH_COLL(X) \
  X(allreduce, COLL_COHORT_ALLREDUCE)               \
  X(bcast, COLL_COHORT_BCAST)                       \
  X(reduce, COLL_COHORT_REDUCE)                     \
  X(allgather, COLL_COHORT_ALLGATHER)               \
  X(reduce_scatter_block, COLL_COHORT_REDUCE_SCATTER_BLOCK) \
  X(alltoall, COLL_COHORT_ALLTOALL)                 \
  X(barrier, COLL_COHORT_BARRIER)

typedef struct mca_coll_cohort_module_t {
  mca_coll_base_module_t super;
  coll_cohort_comm_t *state;
#define COHORT_PREV_FIELDS(name, bit)                  \
  mca_coll_base_module_##name##_fn_t prev_##name;       \
  mca_coll_base_module_t *prev_##name##_module;
  COHORT_FOR_EACH_COLL(COHORT_PREV_FIELDS)
} mca_coll_cohort_module_t;

static void module_construct(mca_coll_cohort_module_t *m) {
  m->state = NULL;
#define COHORT_PREV_CLEAR(name, bit) \
  m->prev_##name = NULL;             \
  m->prev_##name##_module = NULL;
  COHORT_FOR_EACH_COLL(COHORT_PREV_CLEAR)
}

static void module_destruct(mca_coll_cohort_module_t *m) {
  if (m->state != NULL) coll_cohort_comm_free(m->state);
  m->state = NULL;
#define COHORT_PREV_RELEASE(name, bit) \
  if (m->prev_##name##_module != NULL) OBJ_RELEASE(m->prev_##name##_module);
  COHORT_FOR_EACH_COLL(COHORT_PREV_RELEASE)
}

OBJ_CLASS_INSTANCE(mca_coll_cohort_module_t, mca_coll_base_module_t, module_construct,
                   module_destruct);

/* ------------------------------------------------------------------ parameters, output */

static coll_cohort_params_t params = COLL_COHORT_PARAMS_DEFAULT; /* the MCA variables' storage */
static int offered = 0; /* COLL_COHORT_* bits, from the logic at open */
static int output_stream = -1;

/* The logic's messages: warnings always, the rest up to coll_cohort_verbose (the stream's
 * verbosity); Open MPI's default stream prefixes them with [host:pid] on stderr. */
static void output(int level, const char *text) {
  if (level <= 0) {
    opal_output(output_stream, "%s", text);
  } else {
    opal_output_verbose(level, output_stream, "%s", text);
  }
}

/* ------------------------------------------------------------------ collectives */

#define MODULE(module) ((mca_coll_cohort_module_t *)(module))

static int cohort_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module) {
  mca_coll_cohort_module_t *m = MODULE(module);
  int rc;
  if (coll_cohort_allreduce(m->state, sbuf, rbuf, count, dtype, op, &rc)) return rc;
  return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
}

static int cohort_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_cohort_module_t *m = MODULE(module);
  int rc;
  if (coll_cohort_bcast(m->state, buf, count, dtype, root, &rc)) return rc;
  return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
}

static int cohort_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module) {
  mca_coll_cohort_module_t *m = MODULE(module);
  int rc;
  if (coll_cohort_reduce(m->state, sbuf, rbuf, count, dtype, op, root, &rc)) return rc;
  return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module);
}

static int cohort_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module) {
  mca_coll_cohort_module_t *m = MODULE(module);
  int rc;
  if (coll_cohort_reduce_scatter_block(m->state, sbuf, rbuf, rcount, dtype, op, &rc)) return rc;
  return m->prev_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                      m->prev_reduce_scatter_block_module);
}

/* Allgather and alltoall take the same arguments: one definition serves both. */
#define COHORT_BLOCKS_COLL(name)                                                                 \
  static int cohort_##name(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,         \
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype,              \
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {  \
    mca_coll_cohort_module_t *m = MODULE(module);                                                \
    int rc;                                                                                      \
    if (coll_cohort_##name(m->state, sbuf, scount, sdtype, rbuf, rcount, rdtype, &rc)) return rc; \
    return m->prev_##name(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,                      \
                          m->prev_##name##_module);                                              \
  }
COHORT_BLOCKS_COLL(allgather)
COHORT_BLOCKS_COLL(alltoall)

static int cohort_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  mca_coll_cohort_module_t *m = MODULE(module);
  int rc;
  if (coll_cohort_barrier(m->state, &rc)) return rc;
  return m->prev_barrier(comm, m->prev_barrier_module);
}

/* ------------------------------------------------------------------ module */

/* Modules are enabled from the lowest priority up, so comm->c_coll holds what we would
 * replace: keep it (retained) as the fallback.  Without a fallback for an offered collective
 * the module declines. */
static int module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm) {
  mca_coll_cohort_module_t *m = MODULE(module);
#define COHORT_SAVE_PREV(name, bit)                                               \
  if (offered & (bit)) {                                                          \
    if (comm->c_coll->coll_##name == NULL || comm->c_coll->coll_##name##_module == NULL) { \
      return OMPI_ERROR;                                                          \
    }                                                                             \
    m->prev_##name = comm->c_coll->coll_##name;                                   \
    m->prev_##name##_module = comm->c_coll->coll_##name##_module;                 \
    OBJ_RETAIN(m->prev_##name##_module);                                          \
  }
  COHORT_FOR_EACH_COLL(COHORT_SAVE_PREV)
  m->state = coll_cohort_comm_new(comm);
  return m->state != NULL ? OMPI_SUCCESS : OMPI_ERROR;
}

/* ------------------------------------------------------------------ component */

static int cohort_register(void);
static int cohort_open(void);
static int cohort_close(void);
static int cohort_init_query(bool enable_progress_threads, bool enable_mpi_threads);
static mca_coll_base_module_t *cohort_comm_query(struct ompi_communicator_t *comm, int *priority);

OMPI_MODULE_DECLSPEC extern mca_coll_base_component_2_0_0_t mca_coll_cohort_component;
mca_coll_base_component_2_0_0_t mca_coll_cohort_component = {
    .collm_version =
        {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "cohort",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = cohort_open,
            .mca_close_component = cohort_close,
            .mca_register_component_params = cohort_register,
        },
    .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
    .collm_init_query = cohort_init_query,
    .collm_comm_query = cohort_comm_query,
};

static int cohort_register(void) {
  mca_base_component_t *c = &mca_coll_cohort_component.collm_version;
  (void)mca_base_component_var_register(
      c, "enable", "Use Cohort for the collectives it supports", MCA_BASE_VAR_TYPE_BOOL, NULL, 0,
      0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, &params.enable);
  (void)mca_base_component_var_register(
      c, "priority", "Priority of the cohort coll component (tuned is 30)", MCA_BASE_VAR_TYPE_INT,
      NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &params.priority);
  (void)mca_base_component_var_register(
      c, "verbose",
      "0 quiet; 1 a summary per communicator when it ends (calls run on Cohort, fallbacks by "
      "reason); 2 also the first fallback of each kind; 3 every call",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &params.verbose);
  (void)mca_base_component_var_register(
      c, "host", "Run collectives on host buffers on Cohort too (default: device buffers only)",
      MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
      &params.host_buffers);
  (void)mca_base_component_var_register(
      c, "collectives",
      "Collectives Cohort runs, comma-separated: allreduce, bcast, reduce, allgather, "
      "reduce_scatter_block, alltoall, barrier; or all",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
      &params.collectives);
  (void)mca_base_component_var_register(
      c, "init_timeout",
      "Seconds each phase of a communicator's team creation waits for peers (Cohort's "
      "init_timeout); while a rank has not made the first collective, the others say so this "
      "often",
      MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
      &params.init_timeout);
  return OMPI_SUCCESS;
}

static int cohort_open(void) {
  output_stream = opal_output_open(NULL);
  opal_output_set_verbosity(output_stream, params.verbose);
  offered = coll_cohort_configure(&params, output);
  return OMPI_SUCCESS;
}

static int cohort_close(void) {
  opal_output_close(output_stream);
  output_stream = -1;
  return OMPI_SUCCESS;
}

static int cohort_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  (void)enable_mpi_threads;
  return OMPI_SUCCESS;
}

/* A communicator made with the info key "coll_cohort_enable" = "false" (MPI_Comm_dup_with_info,
 * MPI_Comm_split_type, ...) keeps Open MPI's modules: its info is set before selection. */
static bool disabled_by_info(struct ompi_communicator_t *comm) {
  bool enable = true;
  int found = 0;
  if (comm->super.s_info == NULL) return false;
  opal_info_get_bool(comm->super.s_info, "coll_cohort_enable", &enable, &found);
  return found && !enable;
}

/* Inter-communicators, single ranks, Cohort's own communicators and those whose info says so
 * get no module. */
static mca_coll_base_module_t *cohort_comm_query(struct ompi_communicator_t *comm, int *priority) {
  if (!params.enable || offered == 0 || OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2 ||
      coll_cohort_busy() || disabled_by_info(comm)) {
    return NULL;
  }
  mca_coll_cohort_module_t *m = OBJ_NEW(mca_coll_cohort_module_t);
  if (m == NULL) return NULL;
  m->super.coll_module_enable = module_enable;
#define COHORT_OFFER(name, bit) \
  if (offered & (bit)) m->super.coll_##name = cohort_##name;
  COHORT_FOR_EACH_COLL(COHORT_OFFER)
  *priority = params.priority;
  return &m->super;
}
