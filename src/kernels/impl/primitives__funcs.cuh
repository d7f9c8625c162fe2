// Bodies of the primitives declared in primitives.cuh.  Device code only; include
// primitives.cuh, not this.
//
// A buffer is cut into a head (elements before the body's alignment), a body of whole warp
// tiles (32 lanes x 16 bytes = 512 bytes) and a tail (< 512 bytes).  Every thread handles
// whole 16-byte packs of the body, unroll_for(width) at a time, then head and tail elements.  Each
// pack is always handled by the same thread for every input and the output, so the pack layout
// below only has to be the same for all of them, not contiguous: with narrow accesses a lane
// owns words lane, lane + 32, ... of its tile, and each access instruction of a warp covers
// 32 consecutive words.
//
// Which packs a thread takes (for_each_pack): in a group of whole warps, each warp takes U
// consecutive tiles per round (lane l pack l of each), so one loop step of a warp reads and
// writes U x 512 contiguous bytes of every buffer at constant offsets from one address; any
// other group takes packs index, index + size, ... one at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "impl/primitives__types.cuh"

namespace cohort::kernels {
namespace detail {

inline constexpr int kPackBytes = 16;       // what one thread holds of one input
inline constexpr int kTileBytes = 32 * 16;  // a warp's packs
// Where the head brings the output when it can: a warp tile's boundary, so that every warp
// store of the body writes whole 32-byte sectors and whole 512-byte blocks.  On an H200, c =
// a + b with every pointer misaligned by 4 ran at 85% of the aligned case's bandwidth with a
// body merely 16-byte aligned (each warp store covering part of two sectors), 98% with
// 128-byte and 99.6% with 512-byte alignment.  The head is at most 511 bytes, an element a
// thread.
inline constexpr uintptr_t kStoreAlign = kTileBytes;

// Packs per thread per loop step, all loads issued first: 8, so 8 x 16 bytes of each input
// are in flight per thread (4 reached 1-2% less of the bandwidth with 16-byte accesses; and
// as a kernel's registers, so its occupancy, are those of its widest path, a narrow path
// with fewer packs fell far behind: 78% of cudaMemcpy for bf16 with inputs misaligned by 4
// and 1 pack).  A pack takes 4 registers whatever the width, but with 2- and 1-byte accesses
// each access holds one until the pack is assembled, so those take fewer packs.
__host__ __device__ constexpr int unroll_for(int access_bytes) {
  return access_bytes >= 4 ? 8 : access_bytes == 2 ? 4 : 2;
}

// How a call is cut: `head` elements one at a time, then `npacks` packs (whole tiles) with
// accesses of `width` bytes, then the tail one element at a time.
struct AlignPlan {
  size_t head;
  size_t npacks;
  int width;
};

__device__ __forceinline__ uintptr_t lowest_bit(uintptr_t x) { return x & (~x + 1); }

// Pointers that agree modulo A can all be brought to alignment A by the same head, when their
// misalignment is a whole number of elements; otherwise (an element misaligned to its own
// size) they keep their common alignment and the head is empty.  The head goes on to the
// output's next kStoreAlign boundary when that is a whole number of elements (the inputs,
// which agree with the output modulo A, are then aligned to A too).
template <size_t S>
__device__ __forceinline__ AlignPlan plan_alignment(const void *dst, const void *const *srcs,
                                                    int nsrcs, size_t count) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(dst);
  uintptr_t differ = 0;
  for (int k = 0; k < nsrcs; ++k) differ |= reinterpret_cast<uintptr_t>(srcs[k]) ^ first;
  const uintptr_t common = lowest_bit(differ | kPackBytes);  // 1 .. 16
  const uintptr_t misaligned = first & (common - 1);
  AlignPlan plan;
  if (misaligned % S == 0) {
    uintptr_t head_bytes = (~first + 1) & (kStoreAlign - 1);
    if (head_bytes % S != 0) head_bytes = (common - misaligned) & (common - 1);
    plan.head = head_bytes / S;
    plan.width = static_cast<int>(common);
  } else {
    plan.head = 0;
    plan.width = static_cast<int>(lowest_bit(misaligned));
  }
  if (plan.head > count) plan.head = count;
  plan.npacks = (count - plan.head) * S / kTileBytes * (kTileBytes / kPackBytes);
  return plan;
}

// Calls body(std::integral_constant<int, width>) for a width of 16, 8, 4, 2 or 1.
template <class Body>
__device__ __forceinline__ void with_width(int width, Body &&body) {
  switch (width) {
    case 16: body(std::integral_constant<int, 16>{}); break;
    case 8: body(std::integral_constant<int, 8>{}); break;
    case 4: body(std::integral_constant<int, 4>{}); break;
    case 2: body(std::integral_constant<int, 2>{}); break;
    default: body(std::integral_constant<int, 1>{}); break;
  }
}

// Where the pieces of pack p lie, for accesses of A bytes and elements of S bytes: words of
// max(A, S) bytes (an element is never split between lanes), each of kParts accesses.  Word w
// of pack p begins at origin(p) + w * 32 * kWord; pack p + 32 is pack p's one tile on.
template <int A, size_t S>
struct PackLayout {
  static constexpr int kWord = A > static_cast<int>(S) ? A : static_cast<int>(S);
  static constexpr int kWords = kPackBytes / kWord;
  static constexpr int kParts = kWord / A;

  __device__ static __forceinline__ size_t origin(size_t p) {
    return p / 32 * kTileBytes + p % 32 * kWord;  // p * 16 when A == 16
  }
};

// The pack whose origin is at `at`.
template <int A, class S>
__device__ __forceinline__ void load_pack(Chunk<S> &chunk, const char *at) {
  using L = PackLayout<A, sizeof(S)>;
#pragma unroll
  for (int w = 0; w < L::kWords; ++w) {
#pragma unroll
    for (int t = 0; t < L::kParts; ++t) {
      word<A>(chunk, w * L::kParts + t) = load_word<A>(at + w * 32 * L::kWord + t * A);
    }
  }
}

template <int A, class S>
__device__ __forceinline__ void store_pack(char *at, Chunk<S> &chunk) {
  using L = PackLayout<A, sizeof(S)>;
#pragma unroll
  for (int w = 0; w < L::kWords; ++w) {
#pragma unroll
    for (int t = 0; t < L::kParts; ++t) {
      store_word<A>(at + w * 32 * L::kWord + t * A, word<A>(chunk, w * L::kParts + t));
    }
  }
}

// Calls step(p, std::integral_constant<int, N>{}) for this thread's packs of [0, npacks):
// packs p, p + 32, ..., p + 32 * (N - 1) (tiles in a row, N = U or less at the end) in a
// group of whole warps, else single packs.  Every pack goes to exactly one thread.
template <int U, class Step>
__device__ __forceinline__ void for_each_pack(ThreadGroup group, size_t npacks, Step &&step) {
  if (group.size % 32 != 0) {
    for (size_t p = group.index; p < npacks; p += group.size) {
      step(p, std::integral_constant<int, 1>{});
    }
    return;
  }
  // Round r: warp w takes tiles (r * warps + w) * U ... + U - 1.
  const size_t advance = static_cast<size_t>(U) * group.size;
  size_t p = static_cast<size_t>(group.index / 32) * (U * 32) + group.index % 32;
  for (; p + (U - 1) * 32 < npacks; p += advance) step(p, std::integral_constant<int, U>{});
  // The last, partial round: fewer than U of this thread's tiles are left.
  for (; p < npacks; p += 32) step(p, std::integral_constant<int, 1>{});
}

// ------------------------------------------------------------------ copy

template <int A>
__device__ __forceinline__ void copy_body(ThreadGroup group, char *dst, const char *src,
                                          size_t npacks) {
  for_each_pack<unroll_for(A)>(group, npacks, [&](size_t p, auto packs) {
    constexpr int N = decltype(packs)::value;
    const size_t at = PackLayout<A, 1>::origin(p);
    Chunk<uint8_t> data[N];
#pragma unroll
    for (int u = 0; u < N; ++u) load_pack<A>(data[u], src + at + u * kTileBytes);
#pragma unroll
    for (int u = 0; u < N; ++u) store_pack<A>(dst + at + u * kTileBytes, data[u]);
  });
}

// ------------------------------------------------------------------ reduce

template <class Fmt, class Op>
struct Reduction {
  using S = typename Fmt::Storage;
  using C = typename Fmt::Compute;
  static constexpr int kLanes = kPackBytes / sizeof(S);
  // Formats computed in their storage type accumulate in the chunk itself, 8-bit ones four
  // lanes per instruction where the op has a SIMD form.
  static constexpr bool kInPlace = std::is_same_v<S, C>;
  static constexpr bool kBytewise = kInPlace && sizeof(S) == 1 && Op::kHasBytewise;
  struct Lanes {
    C v[kLanes];
  };
  using Acc = std::conditional_t<kInPlace, Chunk<S>, Lanes>;

  __device__ static __forceinline__ C &lane(Acc &acc, int i) {
    if constexpr (kInPlace)
      return acc.elem[i];
    else
      return acc.v[i];
  }

  // acc = a OP b
  __device__ static __forceinline__ void first(Acc &acc, Chunk<S> &a, Chunk<S> &b) {
    if constexpr (kBytewise) {
#pragma unroll
      for (int w = 0; w < 4; ++w) acc.u32[w] = Op::template bytewise<S>(a.u32[w], b.u32[w]);
    } else {
#pragma unroll
      for (int i = 0; i < kLanes; ++i)
        lane(acc, i) = Op::apply(Fmt::widen(a.elem[i]), Fmt::widen(b.elem[i]));
    }
  }

  // acc = acc OP in
  __device__ static __forceinline__ void add(Acc &acc, Chunk<S> &in) {
    if constexpr (kBytewise) {
#pragma unroll
      for (int w = 0; w < 4; ++w) acc.u32[w] = Op::template bytewise<S>(acc.u32[w], in.u32[w]);
    } else {
#pragma unroll
      for (int i = 0; i < kLanes; ++i)
        lane(acc, i) = Op::apply(lane(acc, i), Fmt::widen(in.elem[i]));
    }
  }

  __device__ static __forceinline__ void widen(Acc &acc, Chunk<S> &in) {
    if constexpr (kInPlace) {
      acc = in;
    } else {
#pragma unroll
      for (int i = 0; i < kLanes; ++i) acc.v[i] = Fmt::widen(in.elem[i]);
    }
  }

  // The stored value of an accumulated one: narrowed, then kAvg's division.
  __device__ static __forceinline__ S finish(C acc, int divisor) {
    S stored = Fmt::narrow(acc);
    if constexpr (Op::kDivides) {
      if (divisor > 1) stored = divide<Fmt>(stored, divisor);
    }
    return stored;
  }

  __device__ static __forceinline__ void finish_pack(Chunk<S> &out, Acc &acc, int divisor) {
    if constexpr (kInPlace) {
      out = acc;
    } else if constexpr (kNarrowsInPairs<Fmt>) {
#pragma unroll
      for (int i = 0; i < kLanes; i += 2) out.u32[i / 2] = Fmt::narrow2(acc.v[i], acc.v[i + 1]);
    } else {
#pragma unroll
      for (int i = 0; i < kLanes; ++i) out.elem[i] = Fmt::narrow(acc.v[i]);
    }
    if constexpr (Op::kDivides) {
      if (divisor > 1) {
#pragma unroll
        for (int i = 0; i < kLanes; ++i) out.elem[i] = divide<Fmt>(out.elem[i], divisor);
      }
    }
  }

  // One loop step: the U packs at `at`, at + kTileBytes, ... of every input, then the output.
  // Both first inputs' loads are issued before any arithmetic; later inputs one at a time.
  template <int A, int U>
  __device__ static __forceinline__ void step(const ReduceOperands &x, size_t head_bytes, char *dst,
                                              const char *src0, size_t at) {
    Chunk<S> in[U];
    Acc acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) load_pack<A>(in[u], src0 + at + u * kTileBytes);
    if (x.nsrcs == 1) {
#pragma unroll
      for (int u = 0; u < U; ++u) widen(acc[u], in[u]);
    } else {
      const char *src1 = static_cast<const char *>(x.srcs[1]) + head_bytes;
      Chunk<S> next[U];
#pragma unroll
      for (int u = 0; u < U; ++u) load_pack<A>(next[u], src1 + at + u * kTileBytes);
#pragma unroll
      for (int u = 0; u < U; ++u) first(acc[u], in[u], next[u]);
#pragma unroll 1
      for (int k = 2; k < x.nsrcs; ++k) {
        const char *src = static_cast<const char *>(x.srcs[k]) + head_bytes;
#pragma unroll
        for (int u = 0; u < U; ++u) load_pack<A>(next[u], src + at + u * kTileBytes);
#pragma unroll
        for (int u = 0; u < U; ++u) add(acc[u], next[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      Chunk<S> out;
      finish_pack(out, acc[u], x.divisor);
      store_pack<A>(dst + at + u * kTileBytes, out);
    }
  }

  template <int A, bool kCompact = false>
  __device__ static __forceinline__ void body(ThreadGroup group, const ReduceOperands &x,
                                              const AlignPlan &plan) {
    const size_t head_bytes = plan.head * sizeof(S);
    char *dst = static_cast<char *>(x.dst) + head_bytes;
    const char *src0 = static_cast<const char *>(x.srcs[0]) + head_bytes;
    auto step_at = [&](size_t p, auto packs) {
      step<A, decltype(packs)::value>(x, head_bytes, dst, src0,
                                      PackLayout<A, sizeof(S)>::origin(p));
    };
    // Formats accumulated wider than stored (fp16/bf16 in fp32) hold twice the registers per
    // pack while a third input and more are added: half the packs per step there, so that a
    // step's loads still fit in the registers all at once (with U packs, bf16 sums of 3 to 8
    // inputs fell to 91% .. 67% of cudaMemcpy).
    constexpr int U = unroll_for(A);
    if constexpr (kCompact) {
      for_each_pack<(kInPlace || U == 1 ? U : U / 2)>(group, plan.npacks, step_at);
    } else if (kInPlace || U == 1 || x.nsrcs <= 2) {
      for_each_pack<U>(group, plan.npacks, step_at);
    } else {
      for_each_pack<U / 2>(group, plan.npacks, step_at);
    }
  }

  // The elements before and after the body, one per thread; accesses of EA bytes (the
  // alignment every element of the call has).
  template <int EA>
  __device__ static __forceinline__ void edges(ThreadGroup group, const ReduceOperands &x,
                                               const AlignPlan &plan) {
    const size_t tail_begin = plan.head + plan.npacks * (kPackBytes / sizeof(S));
    const size_t nedges = plan.head + (x.count - tail_begin);
    for (size_t e = group.index; e < nedges; e += group.size) {
      const size_t offset = (e < plan.head ? e : tail_begin + (e - plan.head)) * sizeof(S);
      C acc = Fmt::widen(load_elem<EA, S>(static_cast<const char *>(x.srcs[0]) + offset));
#pragma unroll 1
      for (int k = 1; k < x.nsrcs; ++k) {
        acc = Op::apply(
            acc, Fmt::widen(load_elem<EA, S>(static_cast<const char *>(x.srcs[k]) + offset)));
      }
      store_elem<EA, S>(static_cast<char *>(x.dst) + offset, finish(acc, x.divisor));
    }
  }

  // run() with three code paths instead of ten: 16-byte packs, packs of whole elements, or
  // one element at a time when an element is misaligned to its own size; widened formats
  // keep half the packs in flight whatever the input count.
  __device__ static __forceinline__ void run_compact(ThreadGroup group, const ReduceOperands &x) {
    AlignPlan plan = plan_alignment<sizeof(S)>(x.dst, x.srcs, x.nsrcs, x.count);
    constexpr int kElem = static_cast<int>(sizeof(S));
    if (plan.width == kPackBytes) {
      body<kPackBytes, true>(group, x, plan);
      edges<kElem>(group, x, plan);
    } else if (kElem > 1 && plan.width >= kElem) {
      body<kElem, true>(group, x, plan);
      edges<kElem>(group, x, plan);
    } else {
      plan.head = 0;
      plan.npacks = 0;
      edges<1>(group, x, plan);
    }
  }

  __device__ static __forceinline__ void run(ThreadGroup group, const ReduceOperands &x) {
    const AlignPlan plan = plan_alignment<sizeof(S)>(x.dst, x.srcs, x.nsrcs, x.count);
    with_width(plan.width, [&](auto width) {
      constexpr int A = decltype(width)::value;
      body<A>(group, x, plan);
      edges<(A < static_cast<int>(sizeof(S)) ? A : static_cast<int>(sizeof(S)))>(group, x, plan);
    });
  }
};

}  // namespace detail

__device__ inline void copy(ThreadGroup group, void *dst, const void *src, size_t bytes) {
  const void *srcs[1] = {src};
  const detail::AlignPlan plan = detail::plan_alignment<1>(dst, srcs, 1, bytes);
  char *out = static_cast<char *>(dst) + plan.head;
  const char *in = static_cast<const char *>(src) + plan.head;
  detail::with_width(plan.width, [&](auto width) {
    detail::copy_body<decltype(width)::value>(group, out, in, plan.npacks);
  });
  const size_t tail_begin = plan.head + plan.npacks * detail::kPackBytes;
  const size_t nedges = plan.head + (bytes - tail_begin);
  for (size_t e = group.index; e < nedges; e += group.size) {
    const size_t i = e < plan.head ? e : tail_begin + (e - plan.head);
    static_cast<char *>(dst)[i] = static_cast<const char *>(src)[i];
  }
}

template <DType D, RedOp Op, bool kCompact>
__device__ inline void reduce_with(ThreadGroup group, const ReduceOperands &operands) {
  using Fmt = detail::Format<D>;
  using Impl = detail::Reduction<Fmt, typename detail::OpOf<Op>::type>;
  ReduceOperands x = operands;
  if constexpr (Op != RedOp::kAvg) x.divisor = 1;
  if constexpr (kCompact) {
    Impl::run_compact(group, x);
  } else {
    Impl::run(group, x);
  }
}

template <DType D, RedOp Op>
__device__ inline void reduce(ThreadGroup group, const ReduceOperands &operands) {
  reduce_with<D, Op, false>(group, operands);
}

template <DType D, RedOp Op>
__device__ inline void reduce_compact(ThreadGroup group, const ReduceOperands &operands) {
  reduce_with<D, Op, true>(group, operands);
}

}  // namespace cohort::kernels
