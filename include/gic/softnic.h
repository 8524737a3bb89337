/*
 * gic/softnic.h - a software NIC that executes mlx5 send WQEs.
 *
 * softnic consumes the queues a ConnectX would: a send queue of 64-byte
 * basic blocks, a doorbell record and a doorbell word per QP, and a CQ of
 * CQE64s with a consumer-index record. Its engine threads (the CPU engine)
 * watch each QP's doorbell word, execute the WQEs the doorbell record covers,
 * move the data, and write CQEs with the mlx5 owner-bit protocol. Bad input
 * produces error CQEs with mlx5 syndromes, never a crash or a write outside
 * a registered region.
 *
 * Semantics (DESIGN.md):
 *  - per QP, WQEs execute in order; the CQE of a signaled WQE is written only
 *    after its data, and that of every earlier WQE, is visible at the target;
 *    unsignaled WQEs produce no CQE (a later CQE retires them);
 *  - the engine acts only on what a doorbell announced, up to the doorbell
 *    record;
 *  - an error moves the QP to the error state; the failing WQE and every
 *    WQE after it complete with an error CQE (the rest: flush errors),
 *    signaled or not;
 *  - a full CQ stalls the QP (no CQE is ever overwritten) until the
 *    consumer-index record frees a slot;
 *  - strict mode also reports protocol mistakes hardware would mis-execute
 *    silently: a doorbell ahead of the doorbell record, a doorbell naming
 *    another QP, a WQE whose ctrl index does not match its slot. Each is an
 *    error CQE (LOCAL_QP_OP_ERR with a SOFTNIC_VSYND_* vendor syndrome).
 *
 * Two PEs in one process are two protection domains; a QP of each is
 * connected to the other, and rkeys resolve in the peer QP's domain.
 *
 * Errors: functions return 0 or a positive errno; constructors return NULL
 * and set errno. softnic_last_error() gives the text of the latest error.
 * Not thread-safe for object creation/destruction on one softnic; posting
 * through the queue views is safe from any thread.
 */
#ifndef GIC_SOFTNIC_H
#define GIC_SOFTNIC_H

#include <stddef.h>
#include <stdint.h>

#include "gic/post.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct softnic softnic;
typedef struct softnic_pd softnic_pd;
typedef struct softnic_mr softnic_mr;
typedef struct softnic_cq softnic_cq;
typedef struct softnic_qp softnic_qp;

/* Access rights of a memory region (values as IBV_ACCESS_*). */
enum softnic_access {
	SOFTNIC_ACCESS_LOCAL_WRITE = 1,
	SOFTNIC_ACCESS_REMOTE_WRITE = 2,
	SOFTNIC_ACCESS_REMOTE_READ = 4,
	SOFTNIC_ACCESS_REMOTE_ATOMIC = 8,
};

/* Vendor syndromes in softnic's error CQEs: which check failed. */
enum softnic_vsynd {
	SOFTNIC_VSYND_NONE = 0,
	SOFTNIC_VSYND_BAD_OPCODE = 0x01,
	SOFTNIC_VSYND_BAD_DS = 0x02,
	SOFTNIC_VSYND_INLINE_OVERRUN = 0x03,
	SOFTNIC_VSYND_BAD_LKEY = 0x04,
	SOFTNIC_VSYND_LOCAL_BOUNDS = 0x05,
	SOFTNIC_VSYND_LOCAL_ACCESS = 0x06,
	SOFTNIC_VSYND_BAD_RKEY = 0x07,
	SOFTNIC_VSYND_REMOTE_BOUNDS = 0x08,
	SOFTNIC_VSYND_REMOTE_ACCESS = 0x09,
	SOFTNIC_VSYND_ATOMIC_ALIGN = 0x0a,
	SOFTNIC_VSYND_BAD_LENGTH = 0x0b,
	SOFTNIC_VSYND_NOT_CONNECTED = 0x0c,
	SOFTNIC_VSYND_PEER_GONE = 0x0d,
	SOFTNIC_VSYND_NO_RECV_CQ = 0x0e,
	SOFTNIC_VSYND_WQE_PAST_DBREC = 0x0f,
	SOFTNIC_VSYND_BAD_DBREC = 0x10,        /* record moved back or past the ring */
	SOFTNIC_VSYND_STRICT_DB_AHEAD = 0x21,   /* strict: dbrec behind doorbell */
	SOFTNIC_VSYND_STRICT_DB_QPN = 0x22,     /* strict: doorbell for another QP */
	SOFTNIC_VSYND_STRICT_WQE_INDEX = 0x23,  /* strict: ctrl index != slot */
};

/* Allocator for queue memory: send queues, doorbell records, doorbell
 * words and CQ rings. It must return zeroed memory aligned to `align` that
 * both the submitters and the engine reach at the same address (for GPU
 * submitters with the CPU engine: pinned host memory mapped into the GPU).
 * NULL: ordinary host memory. */
typedef struct softnic_allocator {
	void *(*alloc)(size_t size, size_t align, void *ctx);
	void (*free)(void *p, void *ctx);
	/* Optional: called once softnic has initialised the memory (e.g. to
	 * move managed memory to the GPU before the first post touches it). */
	void (*prepared)(void *p, size_t size, void *ctx);
	void *ctx;
} softnic_allocator;

typedef struct softnic_attr {
	int engine_threads; /* CPU engine threads; 0: none, drive with softnic_progress() */
	int strict;         /* 1: report protocol mistakes as errors */
	int pin_engines;    /* 1: pin engine thread i to CPU (first_cpu + i) */
	int first_cpu;
	const softnic_allocator *queue_mem; /* NULL: host memory */
} softnic_attr;

/* Opens a softnic. attr may be NULL (one engine thread, not strict). The
 * engine threads start at once. */
softnic *softnic_open(const softnic_attr *attr);

/* Stops the engine threads and frees everything still allocated. */
void softnic_close(softnic *nic);

/* Latest error text of this softnic's object calls (engine errors are per
 * QP: softnic_qp_error()). Read it from the thread that made the call. */
const char *softnic_last_error(const softnic *nic);

/* Runs one engine pass over every QP on the calling thread; returns the
 * number of WQEs executed. For tests and for attr.engine_threads == 0. */
int softnic_progress(softnic *nic);

softnic_pd *softnic_pd_alloc(softnic *nic);
int softnic_pd_free(softnic_pd *pd); /* EBUSY while MRs or QPs use it */

/* Registers [addr, addr + len) with the given SOFTNIC_ACCESS_* rights.
 * len 0 or addr NULL: EINVAL. A key carries an 8-bit generation (as an
 * mlx5 mkey carries its variant), so a stale key fails its lookup. */
softnic_mr *softnic_reg_mr(softnic_pd *pd, void *addr, size_t len, int access);
int softnic_dereg_mr(softnic_mr *mr);
uint32_t softnic_mr_lkey(const softnic_mr *mr);
uint32_t softnic_mr_rkey(const softnic_mr *mr);

/* A CQ of 2^log_cqe_cnt CQE64s (1..16). */
softnic_cq *softnic_cq_create(softnic *nic, int log_cqe_cnt);
int softnic_cq_destroy(softnic_cq *cq); /* EBUSY while a QP uses it */

typedef struct softnic_qp_attr {
	int log_sq_bb;    /* send queue of 2^log_sq_bb basic blocks (1..14: a larger
			   * ring could move a full 2^16 between two doorbell reads,
			   * so that the 16-bit doorbell repeats unseen) */
	softnic_cq *send_cq;
	softnic_cq *recv_cq; /* receives WRITE_IMM completions; may be NULL */
} softnic_qp_attr;

/* An RC QP, not yet connected (its doorbells fail until it is). */
softnic_qp *softnic_qp_create(softnic_pd *pd, const softnic_qp_attr *attr);

/* Destroys a QP; a connected peer then fails its next WQE with a transport
 * retry error (the peer vanished). */
int softnic_qp_destroy(softnic_qp *qp);

/* Connects two QPs to each other (RC, both directions). */
int softnic_qp_connect(softnic_qp *a, softnic_qp *b);

uint32_t softnic_qp_num(const softnic_qp *qp);

/* The QP of this softnic numbered qpn (to connect by the number a peer
 * sent through a bootstrap); NULL with errno ENOENT when there is none. */
softnic_qp *softnic_qp_find(softnic *nic, uint32_t qpn);

/* 1 once the QP is in the error state. */
int softnic_qp_in_error(const softnic_qp *qp);

/* Text of the QP's first error ("" if none): what failed and where. The
 * text lives in the QP; call from one thread at a time. */
const char *softnic_qp_error(const softnic_qp *qp);

/* What a SOFTNIC_VSYND_* vendor syndrome means. */
const char *softnic_vsynd_text(uint8_t vendor_syndrome);

/* Fills a submitter's view of the QP's send queue and its send CQ. The
 * view points into softnic's queue memory; *cq must outlive *sq. */
int softnic_qp_view(softnic_qp *qp, gic_sq *sq, gic_cq *cq);

/* Fills a view of a CQ (for a receive CQ). */
int softnic_cq_view(softnic_cq *cq, gic_cq *view);

/* Counters of the softnic since open. */
typedef struct softnic_stats {
	uint64_t wqes_executed;
	uint64_t cqes_written;
	uint64_t error_cqes;
	uint64_t strict_violations;
	uint64_t cq_full_stalls;
} softnic_stats;
void softnic_get_stats(const softnic *nic, softnic_stats *out);

/* ------------------------------------------------------------------ */
/* The WQE decoder, exposed for tests and the fuzzer. */

enum { SOFTNIC_MAX_SGE = 16 };

typedef struct softnic_wqe {
	uint8_t opcode;
	uint8_t fm_ce_se;
	uint16_t wqe_index;
	uint32_t qpn;
	uint32_t ds;
	uint32_t imm;            /* as in the WQE (big-endian) */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t atomic_add;
	const uint8_t *inline_data; /* into the decoded bytes; NULL if none */
	uint32_t inline_len;
	uint32_t num_sge;
	struct { uint64_t addr; uint32_t lkey; uint32_t len; } sge[SOFTNIC_MAX_SGE];
	uint64_t total_len;      /* inline_len + the sge lengths */
} softnic_wqe;

/* Decodes the WQE in bytes[0, avail), avail being a multiple of 16 and at
 * least the WQE's ds * 16. Returns 0, or an mlx5 syndrome with
 * *vendor_syndrome set to the SOFTNIC_VSYND_* of the failed check. */
int softnic_decode_wqe(const uint8_t *bytes, size_t avail, softnic_wqe *out,
		       uint8_t *vendor_syndrome);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_H */
