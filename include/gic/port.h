/*
 * gic/port.h - the host/device portability layer.
 *
 * The posting and polling logic (gic/post.h) is written once and compiled
 * twice: as host C (GCC/Clang __atomic builtins, the compiler's form of C11
 * atomics that also works on plain objects and in C++), and as CUDA device
 * code (PTX loads, stores and fences with an explicit scope). Every helper is
 * named by operation, scope and ordering, e.g. gic_st_release_sys_u64().
 *
 * On the host there is one coherence domain, so "gpu" and "sys" scope map to
 * the same C11 ordering; the scope matters only on the device.
 */
#ifndef GIC_PORT_H
#define GIC_PORT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define GIC_HD static __host__ __device__ __forceinline__
#define GIC_DEV static __device__ __forceinline__
#else
#define GIC_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define GIC_ON_DEVICE 1
#else
#define GIC_ON_DEVICE 0
#include <time.h>
#if !defined(CLOCK_MONOTONIC)
#error "gic/port.h needs POSIX clocks: define _GNU_SOURCE (or _POSIX_C_SOURCE >= 199309L) before the first #include"
#endif
#endif

/* ------------------------------------------------------------------ */
/* Byte order. Both the x86/Arm hosts and NVIDIA GPUs are little-endian;
 * mlx5 structures are big-endian. */

GIC_HD uint16_t gic_bswap16(uint16_t v)
{
	return (uint16_t)((v >> 8) | (v << 8));
}

GIC_HD uint32_t gic_bswap32(uint32_t v)
{
#if GIC_ON_DEVICE
	return __byte_perm(v, 0, 0x0123);
#else
	return __builtin_bswap32(v);
#endif
}

GIC_HD uint64_t gic_bswap64(uint64_t v)
{
	return ((uint64_t)gic_bswap32((uint32_t)v) << 32) |
	       gic_bswap32((uint32_t)(v >> 32));
}

#define gic_htobe16(v) gic_bswap16(v)
#define gic_htobe32(v) gic_bswap32(v)
#define gic_htobe64(v) gic_bswap64(v)
#define gic_be16toh(v) gic_bswap16(v)
#define gic_be32toh(v) gic_bswap32(v)
#define gic_be64toh(v) gic_bswap64(v)

/* ------------------------------------------------------------------ */
/* Loads and stores with ordering. "relaxed" is a single-copy-atomic access
 * with no ordering; "release" orders every earlier load/store of the thread
 * before it; "acquire" orders every later access after it. */

GIC_HD void gic_st_relaxed_sys_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

GIC_HD void gic_st_relaxed_sys_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.relaxed.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/* A store to a device register mapped into the GPU (a NIC's doorbell
 * page, UAR): st.mmio.relaxed.sys, the form rdma-core's and DOCA's GPU
 * paths use for a UAR, which the memory system neither merges nor
 * elides (PTX ISA 8.2, sm_70 and later; works on ordinary GPU and
 * host-mapped memory too). On the host a relaxed atomic store, as
 * rdma-core's mmio_write64 is a plain volatile store. */
GIC_HD void gic_st_mmio_relaxed_sys_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.mmio.relaxed.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

GIC_HD void gic_st_release_gpu_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GIC_HD void gic_st_release_gpu_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.release.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GIC_HD void gic_st_release_sys_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.release.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GIC_HD void gic_st_release_sys_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	asm volatile("st.release.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

GIC_HD uint32_t gic_ld_relaxed_sys_u32(const uint32_t *p)
{
#if GIC_ON_DEVICE
	uint32_t v;
	asm volatile("ld.relaxed.sys.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

GIC_HD uint64_t gic_ld_relaxed_sys_u64(const uint64_t *p)
{
#if GIC_ON_DEVICE
	uint64_t v;
	asm volatile("ld.relaxed.sys.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

GIC_HD uint32_t gic_ld_acquire_gpu_u32(const uint32_t *p)
{
#if GIC_ON_DEVICE
	uint32_t v;
	asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GIC_HD uint64_t gic_ld_acquire_gpu_u64(const uint64_t *p)
{
#if GIC_ON_DEVICE
	uint64_t v;
	asm volatile("ld.acquire.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GIC_HD uint32_t gic_ld_acquire_sys_u32(const uint32_t *p)
{
#if GIC_ON_DEVICE
	uint32_t v;
	asm volatile("ld.acquire.sys.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

GIC_HD uint64_t gic_ld_acquire_sys_u64(const uint64_t *p)
{
#if GIC_ON_DEVICE
	uint64_t v;
	asm volatile("ld.acquire.sys.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* The hand-off chain's read (post.h's hand-off and ticket lock, words only
 * threads of one GPU share): on the device a GPU-scope relaxed load, its
 * caller fencing before it acts on what the chain carries; on the host an
 * acquire load, the same order in a form ThreadSanitizer checks (it does
 * not model fences). */
GIC_HD uint64_t gic_chain_ld_gpu_u64(const uint64_t *p)
{
#if GIC_ON_DEVICE
	uint64_t v;
	asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/* ------------------------------------------------------------------ */
/* Fences. */

/* Orders this thread's earlier accesses before its later ones, as observed
 * by threads of the same GPU (host: a full C11 fence). */
GIC_HD void gic_fence_acq_rel_gpu(void)
{
#if GIC_ON_DEVICE
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Orders this thread's earlier loads and stores before its later stores
 * (a release fence), at GPU scope: fence.release.gpu where the toolkit
 * and the GPU have it (sm_90 and later, CUDA 13; no CCTL.IVALL follows
 * its MEMBAR, which would wait for every outstanding load and empty the
 * SM's L1), else fence.acq_rel.gpu, which also releases. */
GIC_HD void gic_fence_release_gpu(void)
{
#if GIC_ON_DEVICE && __CUDA_ARCH__ >= 900 && defined(__CUDACC_VER_MAJOR__) && \
	__CUDACC_VER_MAJOR__ >= 13
	asm volatile("fence.release.gpu;" ::: "memory");
#elif GIC_ON_DEVICE
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/* Orders this thread's earlier loads before its later loads and stores
 * (an acquire fence), at GPU scope: fence.acquire.gpu where the toolkit
 * and the GPU have it (sm_90 and later, CUDA 13: a CCTL.IVALL after the
 * loads, no MEMBAR, so relaxed loads issued before it stay in flight
 * together), else fence.acq_rel.gpu. */
GIC_HD void gic_fence_acquire_gpu(void)
{
#if GIC_ON_DEVICE && __CUDA_ARCH__ >= 900 && defined(__CUDACC_VER_MAJOR__) && \
	__CUDACC_VER_MAJOR__ >= 13
	asm volatile("fence.acquire.gpu;" ::: "memory");
#elif GIC_ON_DEVICE
	asm volatile("fence.acq_rel.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/* fence.acq_rel.sys: orders this thread's earlier loads and stores
 * before its later ones for every observer, host and devices. */
GIC_HD void gic_fence_acq_rel_sys(void)
{
#if GIC_ON_DEVICE
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_ACQ_REL);
#endif
}

/* As above, observed by every agent of the system: CPU, NIC, peer GPUs. */
GIC_HD void gic_fence_sc_sys(void)
{
#if GIC_ON_DEVICE
	asm volatile("fence.sc.sys;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* CUDA's __threadfence(): fence.sc.gpu on sm_70+. */
GIC_HD void gic_fence_sc_gpu(void)
{
#if GIC_ON_DEVICE
	asm volatile("fence.sc.gpu;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Keeps the compiler from moving memory accesses across this point; no
 * hardware ordering. */
GIC_HD void gic_compiler_barrier(void)
{
#if GIC_ON_DEVICE
	asm volatile("" ::: "memory");
#else
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ------------------------------------------------------------------ */
/* Read-modify-write atomics (device: GPU scope, relaxed). */

GIC_HD uint64_t gic_atomic_add_relaxed_gpu_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	uint64_t old;
	asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;"
		     : "=l"(old) : "l"(p), "l"(v) : "memory");
	return old;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/* The hand-off chain's link: on the device a fire-and-forget GPU-scope
 * relaxed reduction (the thread does not wait for it), ordered by the
 * fence its caller executes before it; an atomic read-modify-write, so a
 * chain of them carries a release made before the first one to an acquire
 * after a load that reads the last one (PTX observation order; C11
 * release sequence). On the host an acq_rel add: the same order without
 * the fence, in a form ThreadSanitizer checks. */
GIC_HD void gic_chain_add_gpu_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/* Compare-and-swap with acquire on success; returns the value seen. */
GIC_HD uint32_t gic_atomic_cas_acquire_gpu_u32(uint32_t *p, uint32_t expect, uint32_t desired)
{
#if GIC_ON_DEVICE
	uint32_t old;
	asm volatile("atom.acquire.gpu.global.cas.b32 %0, [%1], %2, %3;"
		     : "=r"(old) : "l"(p), "r"(expect), "r"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQUIRE,
				    __ATOMIC_RELAXED);
	return expect;
#endif
}

/* 64-bit compare-and-swap with acquire on success; returns the value seen. */
GIC_HD uint64_t gic_atomic_cas_acquire_gpu_u64(uint64_t *p, uint64_t expect, uint64_t desired)
{
#if GIC_ON_DEVICE
	uint64_t old;
	asm volatile("atom.acquire.gpu.global.cas.b64 %0, [%1], %2, %3;"
		     : "=l"(old) : "l"(p), "l"(expect), "l"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQUIRE,
				    __ATOMIC_RELAXED);
	return expect;
#endif
}

/* Fire-and-forget GPU-scope relaxed reductions (the thread does not wait
 * for them): *p |= v, *p &= v, *p += v. */
GIC_HD void gic_red_or_relaxed_gpu_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	asm volatile("red.relaxed.gpu.global.or.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_fetch_or(p, v, __ATOMIC_RELAXED);
#endif
}

GIC_HD void gic_red_and_relaxed_gpu_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	asm volatile("red.relaxed.gpu.global.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_fetch_and(p, v, __ATOMIC_RELAXED);
#endif
}

GIC_HD void gic_red_add_relaxed_gpu_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/* Exchange with acquire; returns the old value (spin-lock acquisition). */
GIC_HD uint32_t gic_atomic_exch_acquire_sys_u32(uint32_t *p, uint32_t v)
{
#if GIC_ON_DEVICE
	uint32_t old;
	asm volatile("atom.acquire.sys.global.exch.b32 %0, [%1], %2;"
		     : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	return __atomic_exchange_n(p, v, __ATOMIC_ACQUIRE);
#endif
}

/* Fetch-and-add at system scope, sequentially consistent (the target of an
 * RDMA atomic may be watched by any agent). */
GIC_HD uint64_t gic_atomic_add_sc_sys_u64(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	uint64_t old;
	asm volatile("fence.sc.sys;\n\tatom.acq_rel.sys.global.add.u64 %0, [%1], %2;"
		     : "=l"(old) : "l"(p), "l"(v) : "memory");
	return old;
#else
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
#endif
}

/* Compare-and-swap at system scope, sequentially consistent (an RDMA
 * compare-swap's target); returns the value seen. */
GIC_HD uint64_t gic_atomic_cas_sc_sys_u64(uint64_t *p, uint64_t expect, uint64_t desired)
{
#if GIC_ON_DEVICE
	uint64_t old;
	asm volatile("fence.sc.sys;\n\tatom.acq_rel.sys.global.cas.b64 %0, [%1], %2, %3;"
		     : "=l"(old) : "l"(p), "l"(expect), "l"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expect;
#endif
}

GIC_HD uint32_t gic_atomic_cas_sc_sys_u32(uint32_t *p, uint32_t expect, uint32_t desired)
{
#if GIC_ON_DEVICE
	uint32_t old;
	asm volatile("fence.sc.sys;\n\tatom.acq_rel.sys.global.cas.b32 %0, [%1], %2, %3;"
		     : "=r"(old) : "l"(p), "r"(expect), "r"(desired) : "memory");
	return old;
#else
	__atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return expect;
#endif
}

/* Orders this thread's earlier loads before its later loads and stores
 * (an acquire fence). */
GIC_HD void gic_fence_acquire_sys(void)
{
#if GIC_ON_DEVICE
	asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/* ------------------------------------------------------------------ */
/* Time and spinning. */

/* Nanoseconds from a monotonic clock: CLOCK_MONOTONIC on the host,
 * %globaltimer on the device (coarse: updates every ~32 ns to 1 us). */
GIC_HD uint64_t gic_now_ns(void)
{
#if GIC_ON_DEVICE
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* One step of a spin-wait: a pause on x86, nothing on the device. */
GIC_HD void gic_cpu_relax(void)
{
#if GIC_ON_DEVICE
#elif defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

#endif /* GIC_PORT_H */
