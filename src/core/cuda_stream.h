// Stream-ordered work through the CUDA driver (libcuda.so.1, cuda_driver.h), for the paths
// that move device memory through host memory: copies, 32-bit words the stream writes or waits
// for in page-locked memory the host polls and writes (CUDA's stream memory operations),
// events, and page-locked memory mapped for the device.  The driver's API only, no runtime:
// these run wherever the driver does, a build without the CUDA toolkit and the tests' fake
// driver included.  Streams and events are opaque (a cudaStream_t is a CUstream).
//
// Every call acts in the calling thread's current CUDA context and returns COHORT_ERR_CUDA
// with the driver's words (and `what`) on failure, COHORT_ERR_NOT_SUPPORTED where the driver
// lacks the entry point.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace cohort::cuda {

// COHORT_SUCCESS when this driver has every entry point below, else COHORT_ERR_NOT_SUPPORTED
// naming the first missing one.
Status stream_ops_available();

// COHORT_SUCCESS when this driver also has what a call captured into a CUDA graph needs (host
// functions, user objects, the capture's graph), else COHORT_ERR_NOT_SUPPORTED naming the
// first missing entry point.
Status capture_ops_available();

// The calling thread's current context (nullptr: none), and a scope in which `context` is
// current (a team going away on a thread of no context frees what it made in its own).
void *current_context();
class ContextScope {
 public:
  explicit ContextScope(void *context);
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

 private:
  bool pushed_ = false;
};

// Page-locked host memory mapped for the device (CU_MEMHOSTALLOC_DEVICEMAP | PORTABLE).
Status mapped_alloc(size_t bytes, void **host, const char *what);
void mapped_free(void *host);

// A stream of this context ordered with the legacy default stream (default flags): what a
// blocking call runs on, so that it sees what the caller wrote before it (cudaMemcpy from
// pageable memory returns before its copy reached the device: only the legacy stream and the
// streams ordered with it wait for it).
Status stream_create(void **stream, const char *what);
void stream_destroy(void *stream);
// COHORT_SUCCESS when the stream's work is done, COHORT_IN_PROGRESS while it is not.
Status stream_query(void *stream, const char *what);
// COHORT_SUCCESS while the stream is not being captured into a CUDA graph; COHORT_IN_PROGRESS
// while it is.
Status stream_capturing(void *stream, const char *what);

Status event_create(void **event, const char *what);  // without timing
void event_destroy(void *event);
Status event_record(void *event, void *stream, const char *what);
Status event_query(void *event, const char *what);  // as stream_query
Status stream_wait_event(void *stream, void *event, const char *what);

// Unified addressing: either side may be device or page-locked memory.
Status copy_async(void *dst, const void *src, size_t bytes, void *stream, const char *what);
// `word` lies in mapped_alloc memory.  write: *word = value once the stream's earlier work is
// done and visible.  wait: later work of the stream waits until (int32_t)(*word - value) >= 0.
Status write_word(uint32_t *word, uint32_t value, void *stream, const char *what);
Status wait_word(uint32_t *word, uint32_t value, void *stream, const char *what);

// Captured into CUDA graphs (capture_ops_available first).  The graph that `stream` is
// capturing owns `object` from now on: `destroy(object)` runs, on a driver thread that may not
// call CUDA, once the graph and every instance of it are gone.
// On failure `destroy(object)` has run, or runs soon on that thread.
Status retain_in_capture(void *stream, void *object, void (*destroy)(void *), const char *what);
// A scope in which the calling thread may allocate while it captures a graph (its capture
// mode relaxed, as NCCL does around its allocations).
class RelaxedCapture {
 public:
  RelaxedCapture();
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture &) = delete;
  RelaxedCapture &operator=(const RelaxedCapture &) = delete;

 private:
  static constexpr int kRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED
  int previous_ = 0;
  bool exchanged_ = false;
};

}  // namespace cohort::cuda
