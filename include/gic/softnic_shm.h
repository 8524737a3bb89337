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
 * Limits: the CPU engine and host memory only (GPU regions through CUDA
 * IPC are not built); one host; attr->queue_mem must be NULL (queues live
 * in the arena). A process killed while its engine held a lock of a
 * peer's CQ (a WRITE_IMM's receive completion, a few instructions) leaves
 * that CQ locked, and the engine that next needs it spins without a limit
 * (open problem). Arenas are sparse files in /dev/shm: pages are taken as
 * they are touched, so a /dev/shm smaller than what the job touches ends
 * the process with SIGBUS rather than an error (reserving every page at
 * open would cost the whole arena in memory). Sanitizers: works under ASan and TSan (the base is the
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
 * failed), or the errno of a failed shm_open/mmap. */
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

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_SHM_H */
