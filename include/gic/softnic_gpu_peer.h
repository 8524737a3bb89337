/*
 * gic/softnic_gpu_peer.h - GPU engines of different processes on one host
 * as RC peers: a QP of one process's GPU-engine softnic (softnic_open_gpu)
 * connected to a QP of another's. The requester's engine writes, reads
 * and does atomics straight in the responder process's GPU memory, mapped
 * into the requester's process once through CUDA IPC: no copy per WQE, no
 * CPU on the path.
 *
 * How:
 *  - softnic_gpu_peer_enable() gives the softnic an export page, GPU memory
 *    of its process (cudaMalloc, exported by CUDA IPC), holding mirrors of
 *    what a peer's engine must check as the responder: the MR table (keys,
 *    bounds, rights, PDs) and the QPs connected to peers (PD, rights,
 *    error state). Object calls keep the mirrors current (registration,
 *    deregistration, QP destroy; a background thread copies QP rights and
 *    error state every 2 ms). Its record (softnic_gpu_peer_rec) is what
 *    the other process needs; the caller swaps records (its bootstrap).
 *  - softnic_gpu_peer_add() opens a peer's page and every GPU allocation
 *    the peer exported, and keeps a map of the peer's MR slots to this
 *    process's addresses, which the engine reads. The same thread opens
 *    allocations the peer exports later (within 2 ms; softnic_gpu_peer_sync
 *    at once).
 *  - MRs of cudaMalloc memory are exported at registration (softnic_reg_mr,
 *    any PD): the allocation's IPC handle goes into the page. Other memory
 *    (host, managed, pool memory) is registered for local use only; a
 *    peer that names it gets a REMOTE_ACCESS error CQE (BAD_RKEY).
 *  - The engine resolves a peer's rkey in the peer's mirrored table, in the
 *    peer's PD, with the peer QP's rights, exactly as within one softnic;
 *    a deregistration clears the mirrored key and then bumps the mirrored
 *    table's MR epoch, which the engine reads once per pass beside the
 *    peer's rights, so the next pass's WQEs fail (SOFTNIC_VSYND_BAD_RKEY),
 *    as with a local deregistration. A region
 *    registered after this process last mapped the peer's fails with
 *    SOFTNIC_VSYND_PEER_UNMAPPED (exchange keys after registering, as RDMA
 *    programs do; the thread maps within 2 ms).
 *
 * Served: RDMA WRITE (inline and pointer segments, any size), RDMA READ,
 * the atomics. Not served: SEND and WRITE_IMM, whose receive queue and CQ
 * are the other process's (error CQE REMOTE_OP_ERR, SOFTNIC_VSYND_PEER_RECV);
 * DC.
 *
 * Peers that close or vanish: each softnic also has a small host file
 * (/dev/shm/gic-gpu-peer.<uid>.<pid>.<n>, named in the record) with the
 * directory's version, a closed mark and its importers, so that a peer
 * learns of changes and of a close without touching its GPU memory. The
 * thread checks each peer's process (pid and start time) and closed mark
 * every 2 ms; a peer found gone, or whose QP was destroyed, moves our QPs
 * connected to it to PEER_GONE, so their next WQE completes with
 * TRANSPORT_RETRY_EXC_ERR (SOFTNIC_VSYND_PEER_GONE). A closing softnic
 * marks itself closed and waits (1 s at most) until every importer closed
 * its handles of its memory before freeing it; a closed peer's importer
 * lets go after marking its QPs. Host files of killed processes are
 * removed by the next enable.
 *
 * MPS: both processes' engines spin at once on one GPU only under MPS
 * (without it the GPU time-slices the two contexts: milliseconds per turn).
 * Under MPS a process killed while its engine kernel runs leaves the other
 * process's CUDA context with an illegal-address error (measured on the
 * H200, docs/softnic.md; MPS does not contain a client that exits without
 * synchronizing); without MPS the survivor gets the PEER_GONE CQE.
 *
 * Rules: enable before the softnic has a PD (PD numbers then come from a
 * range unique on the host, so the engine's MR cache never mixes two
 * processes' tables); close a softnic after its peers stopped posting to
 * it (a job's final barrier). Functions return 0 or a positive errno, with
 * softnic_last_error() saying what failed.
 */
#ifndef GIC_SOFTNIC_GPU_PEER_H
#define GIC_SOFTNIC_GPU_PEER_H

#include <stdint.h>

#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SOFTNIC_GPU_PEER_REC_BYTES = 256, SOFTNIC_GPU_PEER_MAX = 8 };

/* What another process needs to add this softnic as its peer: plain bytes
 * (its process, GPU and the export page's IPC handle), to be swapped by
 * the caller's bootstrap. */
typedef struct softnic_gpu_peer_rec {
	uint8_t bytes[SOFTNIC_GPU_PEER_REC_BYTES];
} softnic_gpu_peer_rec;

/* Makes nic (a GPU-engine softnic with no PD yet) reachable from GPU
 * engines of other processes and fills *rec. Starts the background thread.
 * EINVAL (not a GPU engine, or enabled already), EBUSY (a PD exists), or
 * the CUDA failure's errno. */
int softnic_gpu_peer_enable(softnic *nic, softnic_gpu_peer_rec *rec);

/* Adds the softnic of another process whose record is rec: opens its page
 * and exported allocations; *peer (0..SOFTNIC_GPU_PEER_MAX-1) names it for
 * softnic_gpu_peer_connect. EINVAL (a bad record, or one of this process),
 * ENOSPC (too many peers), ENODEV/ENOTSUP (its GPU is not reachable here),
 * EIO (the owner exited or CUDA refused). */
int softnic_gpu_peer_add(softnic *nic, const softnic_gpu_peer_rec *rec, int *peer);

/* Connects qp (RC, not connected) to the QP numbered remote_qpn of peer.
 * Both sides call it (in any order, at once or not): each publishes its
 * QP, then waits up to 10 s for the peer's QP to name it. EINVAL, EISCONN,
 * ETIMEDOUT (the peer's QP never connected to this one), EPIPE (the peer
 * is gone), or a CUDA errno. */
int softnic_gpu_peer_connect(softnic_qp *qp, int peer, uint32_t remote_qpn);

/* Maps what every peer exported since the last refresh, now (the thread
 * does it every 2 ms). 0 or an errno. */
int softnic_gpu_peer_sync(softnic *nic);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_GPU_PEER_H */
