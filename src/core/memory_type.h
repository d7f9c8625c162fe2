// Where a buffer lives, for calls that take host memory only (until GPU collectives exist).
#pragma once

namespace cohort {

enum class MemoryType { kHost, kDevice, kManaged };

// kHost for ordinary (also pinned) host memory, and always in a build without CUDA or when the
// CUDA runtime cannot be used here; the query itself needs an initialised runtime, so callers
// ask only in processes that use a GPU already.
MemoryType memory_type(const void *pointer);

}  // namespace cohort
