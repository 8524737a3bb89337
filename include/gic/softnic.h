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
 * Semantics (docs/DESIGN.md §4.1):
 *  - per QP, WQEs execute in order; the CQE of a signaled WQE is written only
 *    after its data, and that of every earlier WQE, is visible at the target;
 *    unsignaled WQEs produce no CQE (a later CQE retires them);
 *  - the engine acts only on what a doorbell announced, up to the doorbell
 *    record;
 *  - an error moves the QP to the error state; the failing WQE and every
 *    WQE after it complete with an error CQE (the rest: flush errors),
 *    signaled or not;
 *  - a full CQ stalls the QP (no CQE is ever overwritten) until the
 *    consumer-index record frees a slot, unless the CQ ignores overruns;
 *  - every doorbell write is an event, as on hardware: a doorbell whose
 *    index is ahead of the doorbell record keeps the QP watched, its record
 *    re-read on every pass for softnic_attr.doorbell_watch_ns, then once a
 *    millisecond, until the record covers it (so the order doorbell,
 *    record, the same doorbell again, which DOCA GPUNetIO uses and which
 *    leaves the doorbell word unchanged, always completes);
 *  - SEND, SEND_IMM and, on a QP with a receive queue, WRITE_IMM consume
 *    one receive WQE of the responder's RQ or SRQ; with none posted the
 *    requester retries rnr_retry times after the responder's RNR timer,
 *    then fails with RNR_RETRY_EXC_ERR (7: retries forever, as hardware);
 *  - strict mode also reports protocol mistakes hardware would mis-execute
 *    silently: a doorbell ahead of the doorbell record that the record
 *    never catches up with (within the watch), a doorbell naming another
 *    QP, a WQE whose ctrl index does not match its slot. Each is an
 *    error CQE (LOCAL_QP_OP_ERR with a SOFTNIC_VSYND_* vendor syndrome).
 *
 * Atomics operate on the target in host byte order (as a ConnectX with the
 * host-endianness atomic mode the Linux driver selects); their operands are
 * big-endian in the WQE and the fetched value lands in host byte order.
 * Executed: RDMA write (with immediate), RDMA read, send (with immediate),
 * 8-byte fetch-add and compare-swap, 4- and 8-byte masked compare-swap and
 * fetch-add (field boundaries), NOP, DUMP (the local buffer is checked and
 * read; nothing is sent).
 *
 * Dynamically connected transport (docs/softnic.md, "DC"): a DCT
 * (SOFTNIC_QP_DCT) is a responder with a PD, a receive CQ, an SRQ, remote
 * rights and a 64-bit access key; a DCI (SOFTNIC_QP_DCI) is a send QP that
 * is never connected: each of its WQEs but a NOP carries an address vector
 * (struct mlx5_wqe_av, compact 16 or full 48 bytes) right after the control
 * segment, naming a DCT of the same softnic and the key. The engine
 * executes the WQE against that DCT as it would against an RC peer.
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
typedef struct softnic_srq softnic_srq;

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
	SOFTNIC_VSYND_BAD_ATOMIC_SIZE = 0x11,  /* masked atomic opmod: not 4 or 8 bytes */
	SOFTNIC_VSYND_RNR = 0x12,              /* no receive posted, retries exhausted */
	SOFTNIC_VSYND_RECV_TOO_SMALL = 0x13,   /* the message exceeds the receive WQE */
	SOFTNIC_VSYND_RECV_BAD_KEY = 0x14,     /* a receive WQE's lkey, bounds or rights */
	SOFTNIC_VSYND_BAD_RQ_DBREC = 0x15,     /* receive record past the queue */
	SOFTNIC_VSYND_DEVICE_OP = 0x16,        /* SEND data or a receive in GPU memory (CPU engine) */
	SOFTNIC_VSYND_ATOMIC_CONTENDED = 0x17, /* masked atomic lost its CAS too often */
	SOFTNIC_VSYND_INLINE_READ = 0x18,      /* an RDMA READ with an inline segment */
	SOFTNIC_VSYND_QP_RIGHTS = 0x19,        /* the responder QP grants no such right */
	SOFTNIC_VSYND_WIRE_TOO_LONG = 0x1a,    /* message larger than the wire's ring */
	SOFTNIC_VSYND_DC_BAD_KEY = 0x1b,       /* the AV's DC key is not the DCT's */
	SOFTNIC_VSYND_DC_NO_DCT = 0x1c,        /* the AV names no QP of this softnic */
	SOFTNIC_VSYND_DC_BAD_AV = 0x1d,        /* ds too small for the AV's form */
	SOFTNIC_VSYND_DC_NOT_DCI = 0x1e,       /* an AV (full form) on a QP that is no DCI */
	SOFTNIC_VSYND_DC_NOT_DCT = 0x1f,       /* the AV names a QP that is no DCT */
	SOFTNIC_VSYND_COPY_TIMEOUT = 0x20,     /* GPU engine: a large write's shared copy
						* was not done within its deadline */
	SOFTNIC_VSYND_STRICT_DB_AHEAD = 0x21,   /* strict: dbrec behind doorbell */
	SOFTNIC_VSYND_STRICT_DB_QPN = 0x22,     /* strict: doorbell for another QP */
	SOFTNIC_VSYND_STRICT_WQE_INDEX = 0x23,  /* strict: ctrl index != slot */
	SOFTNIC_VSYND_PEER_UNMAPPED = 0x24,     /* GPU peer: the other process's region is
						 * not mapped here yet (softnic_gpu_peer.h) */
	SOFTNIC_VSYND_PEER_RECV = 0x25,         /* GPU peer: SEND or WRITE_IMM into another
						 * process's QP (not served) */
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
	/* How long a doorbell ahead of its record keeps the QP watched (0:
	 * SOFTNIC_DB_WATCH_NS); strict mode reports it when the watch ends. */
	uint64_t doorbell_watch_ns;
} softnic_attr;

enum { SOFTNIC_DB_WATCH_NS = 1000000000 }; /* 1 s */

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
uint32_t softnic_pd_num(const softnic_pd *pd); /* its protection-domain number */

/* Registers [addr, addr + len) with the given SOFTNIC_ACCESS_* rights.
 * len 0 or addr NULL: EINVAL. A key carries an 8-bit generation (as an
 * mlx5 mkey carries its variant), so a stale key fails its lookup. */
softnic_mr *softnic_reg_mr(softnic_pd *pd, void *addr, size_t len, int access);
int softnic_dereg_mr(softnic_mr *mr);
uint32_t softnic_mr_lkey(const softnic_mr *mr);
uint32_t softnic_mr_rkey(const softnic_mr *mr);

/* ------------------------------------------------------------------ */
/* Queues in caller memory.
 *
 * A QP's send ring, receive ring and doorbell record, a CQ's CQE ring and
 * doorbell record, and an SRQ's ring and doorbell record may be memory the
 * caller provides (a softnic_qmem in the object's attr; addr NULL: softnic
 * allocates that one with attr.queue_mem, as before). The doorbell register
 * (bf.reg) is always softnic's. The rules:
 *  - len: at least what the attr implies (softnic_qp_sq_bytes,
 *    softnic_qp_rq_bytes, softnic_cq_ring_bytes, softnic_srq_ring_bytes;
 *    SOFTNIC_DBREC_BYTES for every doorbell record);
 *  - alignment: SOFTNIC_RING_ALIGN for rings, SOFTNIC_DBREC_ALIGN for
 *    records (what softnic's engine needs; rdma-core's mlx5 provider asks
 *    its allocators for page-aligned rings and 8-byte records, which meet
 *    it);
 *  - the memory must stay valid until the object is destroyed; softnic
 *    never frees it (destroy and softnic_close leave it to the caller);
 *  - the CPU engine reads and writes it from its threads (host memory of
 *    this process); the GPU engine from the GPU (memory the GPU reaches at
 *    its address: device, managed, or mapped host memory). softnic cannot
 *    check that: the caller's responsibility. attr.queue_mem's prepared()
 *    is never called for it;
 *  - a shared-memory softnic (gic/softnic_shm.h) takes it only inside this
 *    PE's arena (softnic_shared_alloc), since peers' engines consume this
 *    PE's receive queues and write its CQs; anything else: EINVAL.
 * Initialisation: with SOFTNIC_MEM_INIT in the attr's flags, softnic's host
 * code initialises caller memory at create as it does its own (every byte
 * zeroed; CQEs' op_own 0xf1; an SRQ's WQE i linked to i + 1), so it must be
 * host-writable then: the verbs path, where rdma-core's provider writes a
 * new CQ's op_own bytes and SRQ links itself. Without it softnic writes
 * nothing into caller memory at create (a DEVX-style create, where the
 * hardware does not touch the buffers either): the caller has zeroed the
 * records, made the CQEs read as not done (opcode 0xf, invalid, in op_own:
 * rdma-core's 0xf0, or softnic's 0xf1, which owner-only pollers need too)
 * and linked the SRQ's free list. Bad sizes, alignments or arena placement:
 * EINVAL, with softnic_last_error() naming the buffer, its address, its
 * length and what was needed. */
typedef struct softnic_qmem {
	void *addr;  /* NULL: softnic allocates (len is then ignored) */
	size_t len;  /* bytes at addr */
} softnic_qmem;

enum {
	SOFTNIC_RING_ALIGN = 64,  /* caller rings: send, receive, SRQ, CQE */
	SOFTNIC_DBREC_ALIGN = 8,  /* caller doorbell records */
	SOFTNIC_DBREC_BYTES = 8,  /* QP: [0] receive, [1] send; CQ: [0] consumer
				   * index, [1] arm (not read); SRQ: [0] counter */
};

/* softnic_qp_attr.flags, softnic_cq_attr.flags, softnic_srq_attr.flags:
 * initialise the caller memory of the attr at create (see above). */
#define SOFTNIC_MEM_INIT (1u << 16)

/* A CQ of 2^log_cqe_cnt CQE64s (1..16). Its entries start as 0xf1 in
 * op_own (opcode invalid, owner bit set): neither an opcode-and-owner
 * poller (rdma-core's) nor an owner-only one (DOCA's) sees them as done. */
softnic_cq *softnic_cq_create(softnic *nic, int log_cqe_cnt);

/* CQ modes, as the firmware's CQ context bits of the same names. */
enum softnic_cq_mode {
	SOFTNIC_CQ_OVERRUN_IGNORE = 1, /* oi: the consumer index is never read;
					* a consumer that falls a ring behind
					* loses CQEs (they are overwritten) */
	SOFTNIC_CQ_COLLAPSED = 2,      /* cc: every CQE is written to entry 0
					* (owner bit as for its producer index) */
};

typedef struct softnic_cq_attr {
	int log_cqe_cnt; /* 0..16 (0 only with SOFTNIC_CQ_COLLAPSED) */
	uint32_t mode;   /* SOFTNIC_CQ_* */
	softnic_qmem ring_mem;  /* CQE ring: softnic_cq_ring_bytes(attr) */
	softnic_qmem dbrec_mem; /* consumer-index record: SOFTNIC_DBREC_BYTES */
	uint32_t flags;  /* SOFTNIC_MEM_INIT */
} softnic_cq_attr;

/* A CQ with modes, its queues in caller memory where the attr gives it;
 * EINVAL for a size out of range, an unknown bit, or caller memory that
 * breaks the rules above. */
softnic_cq *softnic_cq_create_ex(softnic *nic, const softnic_cq_attr *attr);

/* Bytes of the CQE ring attr implies (0 for a bad log_cqe_cnt). */
size_t softnic_cq_ring_bytes(const softnic_cq_attr *attr);
int softnic_cq_destroy(softnic_cq *cq); /* EBUSY while a QP uses it */

/* A shared receive queue of 2^log_wqe_cnt WQEs (1..15), each a next
 * segment and max_sge data segments (1..16). */
typedef struct softnic_srq_attr {
	int log_wqe_cnt;
	int max_sge;
	softnic_qmem ring_mem;  /* WQE ring: softnic_srq_ring_bytes(attr) */
	softnic_qmem dbrec_mem; /* WQE counter record: SOFTNIC_DBREC_BYTES */
	uint32_t flags;  /* SOFTNIC_MEM_INIT */
} softnic_srq_attr;
/* EINVAL for attributes out of range, unknown flags, or caller memory
 * that breaks the rules above. */
softnic_srq *softnic_srq_create(softnic_pd *pd, const softnic_srq_attr *attr);
/* Bytes of the ring attr implies: 2^log_wqe_cnt WQEs of the stride
 * softnic_srq_desc_get reports (0 for attributes out of range). */
size_t softnic_srq_ring_bytes(const softnic_srq_attr *attr);
int softnic_srq_destroy(softnic_srq *srq); /* EBUSY while a QP uses it */
uint32_t softnic_srq_num(const softnic_srq *srq);

/* softnic_qp_attr.flags */
enum softnic_qp_flags {
	/* A QP with no receive queue takes WRITE_IMM completions without a
	 * receive WQE (softnic's own extension, which the project's transports
	 * use); with this flag it answers RNR instead, as a ConnectX does. */
	SOFTNIC_QP_NO_IMPLICIT_RECV = 1,
	/* Other QPs ring the same doorbell register (db_mem: a UAR page's
	 * BlueFlame register that several DEVX QPs share, as on a ConnectX):
	 * a doorbell naming another QP only makes this one read its doorbell
	 * record, and is no protocol error in strict mode. */
	SOFTNIC_QP_SHARED_DB = 2,
	/* A doorbell carrying a producer index (ds 0, as NVSHMEM and DOCA ring)
	 * announces the WQEs below it by itself, as a ConnectX acts on the
	 * doorbell write: the record is not read for it (NVSHMEM 3.8's CPU
	 * proxy writes the record's receive word, never its send word). A
	 * doorbell of a WQE's own ctrl segment still waits for the record.
	 * With a shared register, another QP's doorbell can hide this one's:
	 * give such QPs a register each. */
	SOFTNIC_QP_DB_INDEX = 4,
	/* A DC initiator: never connected (softnic_qp_connect: EINVAL); every
	 * WQE but a NOP carries an address vector after its control segment
	 * and executes against the DCT it names (gic/softnic.h top comment).
	 * No receive queue or SRQ. */
	SOFTNIC_QP_DCI = 8,
	/* A DC target: a responder numbered from the QP number space, with
	 * an SRQ (required, and a receive CQ), the attr's dc_key, and the
	 * rights of softnic_qp_set_rights. It executes no WQE of its own
	 * (its doorbell is ignored; send_cq may be NULL) and is never
	 * connected. */
	SOFTNIC_QP_DCT = 16,
	/* SOFTNIC_MEM_INIT (1 << 16) is taken here too. */
};

typedef struct softnic_qp_attr {
	int log_sq_bb;    /* send queue of 2^log_sq_bb basic blocks (1..14: a larger
			   * ring could move a full 2^16 between two doorbell reads,
			   * so that the 16-bit doorbell repeats unseen) */
	softnic_cq *send_cq;
	softnic_cq *recv_cq; /* receive completions; may be NULL without receives */
	int log_rq_wqe;   /* a receive queue of 2^n WQEs (0: none; 1..15) */
	int rq_max_sge;   /* data segments per receive WQE (1..16; 0: 1) */
	softnic_srq *srq; /* receives come from this SRQ (then log_rq_wqe 0) */
	int rnr_retry;    /* 0..6 retries after receiver-not-ready, 7: forever */
	int min_rnr_timer; /* IB code (0..31) of the wait this QP asks its
			    * senders for when it has no receive; 0: 655 ms */
	uint32_t flags;   /* SOFTNIC_QP_*, SOFTNIC_MEM_INIT */
	softnic_qmem sq_mem;    /* send ring: softnic_qp_sq_bytes(attr) */
	softnic_qmem rq_mem;    /* receive ring: softnic_qp_rq_bytes(attr) (an
				 * RQ of its own only: log_rq_wqe > 0) */
	softnic_qmem dbrec_mem; /* doorbell record: SOFTNIC_DBREC_BYTES */
	softnic_qmem db_mem;    /* doorbell register (the engine watches its first 8
				 * bytes): at least 8 bytes, 8-aligned; NULL: softnic's
				 * own SOFTNIC_BF_SIZE-byte register. Never initialised
				 * by softnic (a UAR is the device's) */
	uint64_t dc_key;        /* SOFTNIC_QP_DCT: the access key a DCI's AV must
				 * carry (0 is a key like any other) */
} softnic_qp_attr;

/* An RC QP, not yet connected (its doorbells fail until it is), its
 * queues in caller memory where the attr gives it; with SOFTNIC_QP_DCI a
 * DC initiator, with SOFTNIC_QP_DCT a DC target (their flag comments say
 * what they need). EINVAL for attributes out of range, a DCI with
 * receives, a DCT without an SRQ, or caller memory that breaks the rules
 * above. */
softnic_qp *softnic_qp_create(softnic_pd *pd, const softnic_qp_attr *attr);

/* Bytes of the send ring attr implies (2^log_sq_bb BBs of 64 bytes; 0 for
 * a log_sq_bb out of range). */
size_t softnic_qp_sq_bytes(const softnic_qp_attr *attr);

/* Bytes of the receive ring attr implies: 2^log_rq_wqe WQEs of the stride
 * softnic_qp_desc_get reports (the smallest power of two holding rq_max_sge
 * data segments); 0 without a receive queue or for attributes out of
 * range. rdma-core's QP buffer puts this ring first, padded to at least
 * 64 bytes, and the send ring after it. */
size_t softnic_qp_rq_bytes(const softnic_qp_attr *attr);

/* Destroys a QP; a connected peer then fails its next WQE with a transport
 * retry error (the peer vanished). */
int softnic_qp_destroy(softnic_qp *qp);

/* Connects two QPs to each other (RC, both directions); a and b may be
 * the same QP (loopback: its WQEs act on its own PD's memory, and its
 * messages take its own receives). EINVAL (NULL, QPs of two softnics, a
 * DCI or DCT), EISCONN (either connected already). */
int softnic_qp_connect(softnic_qp *a, softnic_qp *b);

uint32_t softnic_qp_num(const softnic_qp *qp);

/* Changes a QP's receiver-not-ready settings after creation (as verbs set
 * them at RTR and RTS): rnr_retry 0..7, min_rnr_timer 0..31; -1 leaves
 * one as it is. EINVAL out of range. */
int softnic_qp_set_rnr(softnic_qp *qp, int rnr_retry, int min_rnr_timer);

/* The remote rights a QP grants as responder (SOFTNIC_ACCESS_REMOTE_*, as
 * verbs' qp_access_flags), on top of each region's own; a new QP grants
 * all three. A request it does not grant fails with REMOTE_ACCESS_ERR
 * (SOFTNIC_VSYND_QP_RIGHTS). EINVAL for other bits. */
int softnic_qp_set_rights(softnic_qp *qp, int rights);

/* Moves a QP to the error state (verbs' modify to ERR): every WQE not yet
 * executed, and every receive posted to its own queue, completes with a
 * flush error. */
int softnic_qp_to_error(softnic_qp *qp);

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

/* Plain descriptors of the queues, in the form of rdma-core's mlx5dv_qp,
 * mlx5dv_cq and mlx5dv_srq (what outside code that posts directly needs).
 * dbrec[0] is the receive counter, dbrec[1] the send counter (MLX5_RCV_DBR,
 * MLX5_SND_DBR). bf.reg is the doorbell register: bf.size bytes (256) that
 * take a BlueFlame copy of a WQE; the engine reads the doorbell from its
 * first 8 bytes (a program that alternates between two BlueFlame buffers,
 * as a UAR has, must not: there is one). */
typedef struct softnic_qp_desc {
	uint32_t *dbrec;
	struct { void *buf; uint32_t wqe_cnt; uint32_t stride; } sq, rq;
	struct { void *reg; uint32_t size; } bf;
	uint32_t qpn;
} softnic_qp_desc;

typedef struct softnic_cq_desc {
	void *buf;
	uint32_t *dbrec;   /* [0]: consumer index (BE32, 24 bits) */
	uint32_t cqe_cnt;
	uint32_t cqe_size; /* 64 */
	uint32_t cqn;
	uint32_t mode;     /* SOFTNIC_CQ_* */
} softnic_cq_desc;

typedef struct softnic_srq_desc {
	void *buf;
	uint32_t *dbrec;   /* [0]: WQE counter (BE32, 16 bits) */
	uint32_t stride;
	uint32_t wqe_cnt;
	uint32_t srqn;
} softnic_srq_desc;

enum { SOFTNIC_BF_SIZE = 256 };

int softnic_qp_desc_get(const softnic_qp *qp, softnic_qp_desc *out);
int softnic_cq_desc_get(const softnic_cq *cq, softnic_cq_desc *out);

/* The PD, CQ or SRQ of nic with that number (softnic_pd_num, the cqn of
 * softnic_cq_desc_get, softnic_srq_num: what mlx5dv_init_obj reports and
 * firmware commands name), or NULL. No reference is taken: the caller
 * keeps the object alive while it uses it. */
softnic_pd *softnic_pd_find(softnic *nic, uint32_t pdn);
softnic_cq *softnic_cq_find(softnic *nic, uint32_t cqn);
softnic_srq *softnic_srq_find(softnic *nic, uint32_t srqn);
int softnic_srq_desc_get(const softnic_srq *srq, softnic_srq_desc *out);

/* Counters of the softnic since open. */
typedef struct softnic_stats {
	uint64_t wqes_executed;
	uint64_t cqes_written;
	uint64_t error_cqes;
	uint64_t strict_violations;
	uint64_t cq_full_stalls;
	uint64_t rnr_naks;       /* sends that found no receive posted */
	uint64_t doorbell_watches; /* doorbells seen ahead of their record */
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
	uint8_t opmod;           /* ctrl segment's opmod byte */
	uint8_t atomic_size;     /* atomics: operand bytes (4 or 8); else 0 */
	uint64_t atomic_add;     /* swap (CS) or add (FA), host order */
	/* Atomics only (unset for other opcodes): */
	uint64_t atomic_cmp;     /* compare (CS) or field boundary (masked FA) */
	uint64_t atomic_swap_mask;
	uint64_t atomic_cmp_mask;
	const uint8_t *inline_data; /* into the decoded bytes; NULL if none */
	uint32_t inline_len;
	uint32_t num_sge;
	struct { uint64_t addr; uint32_t lkey; uint32_t len; } sge[SOFTNIC_MAX_SGE];
	uint64_t total_len;      /* inline_len + the sge lengths */
	/* DCI WQEs (softnic_decode_dci_wqe) only; av_bytes is 0 for others: */
	uint8_t av_bytes;        /* the address vector's form: 16 or 48 */
	uint32_t dct_num;        /* the DCT it names (low 24 bits of dqp_dct) */
	uint64_t dc_key;         /* its DC access key, host order */
} softnic_wqe;

/* Decodes the WQE in bytes[0, avail), avail being a multiple of 16 and at
 * least the WQE's ds * 16. Returns 0, or an mlx5 syndrome with
 * *vendor_syndrome set to the SOFTNIC_VSYND_* of the failed check. */
int softnic_decode_wqe(const uint8_t *bytes, size_t avail, softnic_wqe *out,
		       uint8_t *vendor_syndrome);

/* The same for a WQE of a DCI: every opcode but NOP carries an address
 * vector after the control segment (compact or full, which the ds count
 * includes); DUMP's is decoded but names no target. SOFTNIC_VSYND_DC_BAD_AV
 * when ds leaves no room for it. */
int softnic_decode_dci_wqe(const uint8_t *bytes, size_t avail, softnic_wqe *out,
			   uint8_t *vendor_syndrome);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_H */
