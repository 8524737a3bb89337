/*
 * softnic's wire: RC connections between softnics of different processes
 * on one host whose buffers are ordinary private memory (malloc, stack,
 * mmap), as perftest's, NCCL's and NVSHMEM's are.
 *
 * Each connected QP pair shares one file in /dev/shm holding a request
 * ring per direction and its payload bytes. The requester's engine reads
 * its own memory into the ring (writes, sends) or reserves room there
 * (reads, atomics); the responder's softnic runs each request through
 * its own execution core on a private "mirror" QP connected to the
 * responder QP, so rkeys, the responder QP's rights, receive queues,
 * RNR, responder CQEs and atomics are checked and done exactly as within
 * one softnic, in the process that owns the memory; the requester then
 * completes in order from the answers. A peer whose process ends (or
 * whose QP is destroyed) fails the WQEs in flight with a transport retry
 * error, and the QP then flushes.
 *
 * Buffers in GPU memory (gic/softnic_devmem.h: regions of
 * softnic_reg_device_mr) are carried by CUDA copies between them and the
 * rings, in the process that owns them: writes, reads and atomics; SEND
 * data and receives there fail with SOFTNIC_VSYND_DEVICE_OP.
 *
 * What it does not do: queues in GPU memory (the wire is the CPU
 * engine's), messages larger than the ring (SOFTNIC_VSYND_WIRE_TOO_LONG),
 * and more than one host.
 */
#ifndef GIC_SOFTNIC_WIRE_H
#define GIC_SOFTNIC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes nic's QP numbers unique on the host (it claims one of 4095 blocks
 * of 4096 numbers, recorded in /dev/shm) so that other processes can name
 * its QPs, and sets the payload ring of each later wire connection to
 * ring_bytes per direction (0: 8 MiB; a multiple of 4096, 64 KiB to 1
 * GiB), which is also the largest message. Call it before creating QPs.
 * Returns 0, EINVAL, EEXIST (enabled already), EOPNOTSUPP (GPU engine),
 * ENOSPC (no free block) or an errno of the /dev/shm file. */
int softnic_wire_enable(softnic *nic, size_t ring_bytes);

/* Connects qp (not connected yet) to the QP numbered remote_qpn of
 * another process's wire-enabled softnic on this host. Requests posted
 * before the remote side connects wait for it (a transport retry error
 * after 10 s). Returns 0, EINVAL, EISCONN, ENOENT (no live process owns
 * that number), EOPNOTSUPP (wire not enabled) or an errno; the reason is
 * in softnic_last_error(). */
int softnic_qp_connect_wire(softnic_qp *qp, uint32_t remote_qpn);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_WIRE_H */
