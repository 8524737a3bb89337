/*
 * gic/softnic_shm.h - softnic across the processes of one host: one PE per
 * process (`mpiexec -n N`), each with its own softnic, QPs connected to QPs
 * of another process's softnic.
 *
 * How: each PE's softnic keeps its engine state (MR table, QP and CQ
 * state), its queue memory and the regions peers may access in one POSIX
 * shared-memory arena. Every process of the job maps every PE's arena at
 * the same virtual address (arena r at base + r * span; rank 0 lets the
 * kernel choose base, each other process claims the same span with
 * MAP_FIXED_NOREPLACE, and the job retries with another base when a
 * process has that address taken), so pointers in engine state, WQE
 * addresses and rkeys' regions mean the same in every process. A QP's
 * engine (the CPU engine of its own process) writes straight into the peer
 * process's region, resolving the rkey in the peer's MR table, with the
 * semantics and error CQEs of gic/softnic.h (bad rkey, bounds, access).
 * The shared-memory names exist only while the job opens: once every
 * process has mapped every arena they are unlinked, so nothing stays in
 * /dev/shm even when a process is killed later.
 *
 * Vanished peers: a watchdog thread of each softnic bumps a heartbeat in
 * its own arena every 2 ms and checks every peer's (its header's closed
 * mark; its process with kill(pid, 0); a zombie once its heartbeat has
 * stopped for 100 ms; any peer whose heartbeat stopped for 5 s). A peer
 * found gone moves every QP connected to it to PEER_GONE, so the next WQE
 * of such a QP completes with a TRANSPORT_RETRY_EXC_ERR error CQE
 * (SOFTNIC_VSYND_PEER_GONE) within a few milliseconds of the peer's exit,
 * never a hang or a crash (its arena stays mapped here until close). A
 * peer that destroys its QP, or closes its softnic, moves ours at once.
 * WQEs that ran before the peer was found gone completed normally (their
 * data went into memory nobody reads any more).
 *
 * A process killed inside the lock of a CQ (its engine writing a
 * WRITE_IMM's receive completion into a peer's CQ, a few instructions)
 * leaves that CQ locked: the engine that next needs it finds the holder's
 * process gone (after 100 ms; a live holder is given 10 s), marks the CQ
 * abandoned, and fails the WQE that needed it with the same PEER_GONE
 * error CQE (when the abandoned CQ is the QP's own send CQ no CQE can be
 * written: the QP is in error, softnic_qp_error says PEER_GONE, and its
 * poller's time limit ends the wait).
 *
 * GPU regions (CUDA IPC; the gic_softnic_shm_cuda library, built where
 * nvcc is): after softnic_shared_cuda_enable, a PE registers cudaMalloc
 * memory with softnic_shared_reg_gpu_mr. The allocation's IPC handle goes
 * into a table in the PE's arena header (peers map the arena, so that is
 * the exchange); a peer's engine that meets an rkey of such a region opens
 * the handle once (cudaIpcOpenMemHandle, lazy peer access) and translates
 * the address by its offset in the allocation. The CPU engine cannot touch
 * GPU memory, so it moves such data with CUDA copies on a stream of its own
 * and runs ATOMIC_FA on GPU memory as a one-thread kernel (a device atomic,
 * atomic against other GPU atomics on it); it waits for both with a time
 * limit. Local regions (lkeys) may be GPU memory as well. The CUDA part
 * also registers this PE's arena with CUDA, so GPU threads can post WQEs
 * and poll CQs of this softnic at the same addresses (gic/post.h).
 * Failures (IPC refused at export, a handle that is not a CUDA IPC handle,
 * a GPU this process cannot open, a process without the CUDA part) fail
 * the WQE with a REMOTE_ACCESS (LOCAL_ACCESS for the local end) error CQE
 * and print what failed on stderr; never a hang.
 *
 * Limits: the CPU engine; one host; attr->queue_mem must be NULL (queues
 * live in the arena). Each PE's arena is taken whole from /dev/shm at open
 * (posix_fallocate: memory, arena_bytes per PE), so a /dev/shm too small
 * for the job fails the open with ENOSPC and a message instead of a
 * SIGBUS later. GPU regions: at most 32 exported allocations per PE, each
 * kept allocated until every PE has closed its softnic; a GPU move costs a
 * CUDA copy and its wait (microseconds), far from the host path's rate.
 * Sanitizers: works under ASan and TSan (the base is the
 * kernel's choice, inside the sanitizer's application ranges); TSan cannot
 * see the other process's accesses and so cannot judge them.
 *
 * Errors: functions return 0 or a positive errno, with softnic_last_error()
 * naming what failed; softnic_open_shared returns NULL, sets errno and
 * prints what failed, and on which PE, on stderr.
 */
#ifndef GIC_SOFTNIC_SHM_H
#define GIC_SOFTNIC_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "gic/boot.h"
#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens this PE's softnic of a multi-process job; collective: every PE of
 * boot calls it with the same arena_bytes (rounded up to 2 MiB; at least
 * 1 MiB, at most 64 GiB), and each bootstrap wait is bounded by timeout_ns.
 * attr as for softnic_open (NULL: one engine thread), except that
 * queue_mem must be NULL. The bootstrap may be
 * freed once every PE has opened (it is not kept). Fails on every PE when
 * it fails on one: EINVAL (arguments, or PEs disagreeing on arena_bytes),
 * ENOMEM, EADDRINUSE (no address span free in every process after 8
 * tries), ETIMEDOUT (a PE did not arrive), ECONNABORTED (another PE
 * failed), ENOSPC (/dev/shm cannot hold the arena), or the errno of a
 * failed shm_open/mmap. */
softnic *softnic_open_shared(const softnic_attr *attr, gic_boot *boot, size_t arena_bytes,
			     uint64_t timeout_ns);

/* size bytes of this PE's arena, zeroed, aligned to align (a power of two
 * up to 4096; 0: 64): the memory to register for peers (an MR with a
 * REMOTE_* right must lie in the arena: softnic_reg_mr says EINVAL for
 * one that does not). NULL with errno EINVAL (not a shared softnic, bad
 * align) or ENOMEM (arena full). */
void *softnic_shared_alloc(softnic *nic, size_t size, size_t align);

/* Gives back what softnic_shared_alloc returned (NULL is ignored). */
void softnic_shared_free(softnic *nic, void *p);

/* Connects qp's half of an RC connection to QP peer_qpn of PE peer_rank
 * (learnt through the bootstrap): qp's WQEs then write into that PE's
 * regions, with rkeys of that PE's protection domain. The peer connects
 * its own half the same way. peer_rank is another PE (two QPs of one
 * softnic connect with softnic_qp_connect). EINVAL (not a shared softnic,
 * rank out of range or this PE's own),
 * ENOENT (no such QP on that PE), EISCONN (qp already connected),
 * EHOSTDOWN (that PE is gone or closed). */
int softnic_qp_connect_remote(softnic_qp *qp, int peer_rank, uint32_t peer_qpn);

/* 1 when the watchdog found PE rank gone (exited, killed, closed, or its
 * heartbeat stopped), 0 when it is alive, -1 for a bad argument. why (may
 * be NULL) receives the reason ("" while alive). */
int softnic_shared_peer_gone(softnic *nic, int rank, const char **why);

/* ---- GPU regions: the gic_softnic_shm_cuda library (CUDA builds). ---- */

/* Makes this PE's softnic serve GPU regions, with CUDA device `device`
 * (an ordinal of this process) running its engine's copies and atomics;
 * registers this PE's arena with CUDA (mapped, so GPU threads may post to
 * its queues and poll its CQs at the same addresses). Not collective; a
 * PE that never calls it cannot reach peers' GPU regions (its WQEs to them
 * fail). 0, or EINVAL (not a shared softnic, enabled already, bad
 * device), ENOTSUP (the GPU cannot use the arena at its host address), EIO
 * (a CUDA call failed); softnic_last_error() and stderr say which. */
int softnic_shared_cuda_enable(softnic *nic, int device);

/* Registers [dptr, dptr + len) of cudaMalloc memory (any GPU of this
 * process) with the rights access (SOFTNIC_ACCESS_*), for local use and,
 * through CUDA IPC, for peers. The allocation must stay allocated until
 * every PE has closed its softnic. NULL with errno EINVAL (CUDA part not
 * enabled, not device memory, range outside one allocation, bad access),
 * ENOTSUP (cudaIpcGetMemHandle refused the allocation: memory from
 * cudaMallocAsync pools, managed memory, cuMemCreate without IPC),
 * ENOSPC (32 allocations exported already), or softnic_reg_mr's errno;
 * softnic_last_error() says which. */
softnic_mr *softnic_shared_reg_gpu_mr(softnic_pd *pd, void *dptr, size_t len, int access);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_SHM_H */
