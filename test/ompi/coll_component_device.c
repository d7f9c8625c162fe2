/* Device memory for the component tests (coll_component_test.c and .f90):
 * COLL_TEST_MEMORY=device puts every rank's MPI_COMM_WORLD buffers in CUDA device memory,
 * =mixed only odd ranks' (even ranks keep host memory).  The programs keep their buffers in
 * host memory, upload a copy before each call (devmem_up), give the call that copy and
 * download it after (devmem_down).  The driver API comes from libcuda.so.1 through dlsym, so
 * no CUDA header is needed: a real GPU's driver, or the fake one (fake_cuda.c), whose device
 * memory the CPU cannot touch.  Built with each program (mpicc, mpifort). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_component_device.h"

typedef unsigned long long DevicePtr; /* CUdeviceptr */
static struct {
  int (*init)(unsigned);
  int (*device_get_count)(int *);
  int (*device_get)(int *, int);
  int (*primary_ctx_retain)(void **, int);
  int (*ctx_set_current)(void *);
  int (*mem_alloc)(DevicePtr *, size_t);
  int (*mem_free)(DevicePtr);
  int (*memcpy)(DevicePtr, DevicePtr, size_t);
} cu;
static int rank;
int devmem_on_device;

/* Ends the run with a FAIL line; flushed, as MPI_Abort does not return. */
static void fail(void) {
  fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

/* A device memory failure ends the run: the results could not be told apart from it. */
static void device_failed(const char *call, int result) {
  printf("FAIL rank %d: %s returned CUDA error %d\n", rank, call, result);
  fail();
}

static void load_symbol(void *lib, const char *name, void *fn) {
  void *symbol = dlsym(lib, name);
  if (symbol == NULL) device_failed(name, -1);
  memcpy(fn, &symbol, sizeof symbol); /* POSIX's way from an object to a function pointer */
}

/* This rank's device (rank modulo the devices visible), current on this thread. */
static void open_device(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("FAIL rank %d: COLL_TEST_MEMORY asks for device memory: %s\n", rank, dlerror());
    fail();
  }
  load_symbol(lib, "cuInit", &cu.init);
  load_symbol(lib, "cuDeviceGetCount", &cu.device_get_count);
  load_symbol(lib, "cuDeviceGet", &cu.device_get);
  load_symbol(lib, "cuDevicePrimaryCtxRetain", &cu.primary_ctx_retain);
  load_symbol(lib, "cuCtxSetCurrent", &cu.ctx_set_current);
  load_symbol(lib, "cuMemAlloc_v2", &cu.mem_alloc);
  load_symbol(lib, "cuMemFree_v2", &cu.mem_free);
  load_symbol(lib, "cuMemcpy", &cu.memcpy);
  int r, count = 0, device = 0;
  void *context = NULL;
  if ((r = cu.init(0)) != 0) device_failed("cuInit", r);
  if ((r = cu.device_get_count(&count)) != 0 || count == 0) device_failed("cuDeviceGetCount", r);
  if ((r = cu.device_get(&device, rank % count)) != 0) device_failed("cuDeviceGet", r);
  if ((r = cu.primary_ctx_retain(&context, device)) != 0)
    device_failed("cuDevicePrimaryCtxRetain", r);
  if ((r = cu.ctx_set_current(context)) != 0) device_failed("cuCtxSetCurrent", r);
}

void devmem_copy(void *to, const void *from, size_t bytes) {
  int r = cu.memcpy((DevicePtr)(uintptr_t)to, (DevicePtr)(uintptr_t)from, bytes);
  if (r != 0) device_failed("cuMemcpy", r);
}

/* COLL_TEST_MEMORY: host (the default), device, or mixed; rank 0 says which. */
void devmem_init(int world_rank) {
  rank = world_rank;
  const char *memory = getenv("COLL_TEST_MEMORY");
  if (memory == NULL || strcmp(memory, "host") == 0) return;
  if (strcmp(memory, "device") != 0 && strcmp(memory, "mixed") != 0) {
    printf("FAIL COLL_TEST_MEMORY=%s: host, device or mixed\n", memory);
    fail();
  }
  devmem_on_device = strcmp(memory, "device") == 0 || rank % 2 == 1;
  if (devmem_on_device) open_device();
  if (rank == 0) {
    printf("memory: MPI_COMM_WORLD's buffers in device memory on %s ranks\n",
           strcmp(memory, "device") == 0 ? "all" : "odd");
    fflush(stdout); /* before the Fortran side's first line, which has buffers of its own */
  }
}

/* What MPI_COMM_WORLD's call gets for the `bytes` at host: a device copy of them where this
 * rank's buffers are on the device (at least a byte, so that it is a buffer of its own), host
 * itself elsewhere. */
void *devmem_alloc(size_t bytes) {
  DevicePtr device = 0;
  int r = cu.mem_alloc(&device, bytes > 0 ? bytes : 1);
  if (r != 0) device_failed("cuMemAlloc_v2", r);
  return (void *)(uintptr_t)device;
}

void devmem_free(void *device) {
  int r = device != NULL ? cu.mem_free((DevicePtr)(uintptr_t)device) : 0;
  if (r != 0) device_failed("cuMemFree_v2", r);
}

void *devmem_up(void *host, size_t bytes) {
  if (!devmem_on_device) return host;
  void *device = devmem_alloc(bytes);
  devmem_copy(device, host, bytes);
  return device;
}

/* After the call: its result back into host, and the device copy freed. */
void devmem_down(void *host, void *device, size_t bytes) {
  if (device == host) return;
  devmem_copy(host, device, bytes);
  devmem_free(device);
}
