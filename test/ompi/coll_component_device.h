/* Device memory for the component tests (coll_component_device.c): COLL_TEST_MEMORY=host (the
 * default), device (every rank) or mixed (odd ranks). */
#ifndef COLL_COMPONENT_DEVICE_H
#define COLL_COMPONENT_DEVICE_H

#include <stddef.h>

/* This rank's MPI_COMM_WORLD buffers are device memory (a test may clear it for a call). */
extern int devmem_on_device;

/* Reads COLL_TEST_MEMORY, makes this rank's device (rank modulo the devices) current where
 * its buffers are on the device; rank 0 says which ranks' are.  A wrong value, or any CUDA
 * failure later, prints a FAIL line and aborts the job. */
void devmem_init(int world_rank);

void *devmem_alloc(size_t bytes); /* at least one byte, so that it is a buffer of its own */
void devmem_free(void *device);   /* NULL: nothing */
void devmem_copy(void *to, const void *from, size_t bytes);

/* What MPI_COMM_WORLD's call gets for the `bytes` at host: a device copy of them where this
 * rank's buffers are on the device, host itself elsewhere; devmem_down copies the result back
 * into host and frees the copy. */
void *devmem_up(void *host, size_t bytes);
void devmem_down(void *host, void *device, size_t bytes);

#endif
