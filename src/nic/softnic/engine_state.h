/*
 * softnic engine state: the plain structures an engine reads and writes.
 *
 * Both engines (CPU threads, GPU persistent kernel) execute WQEs on these
 * and nothing else, so that one execution core (engine_core.h) serves both.
 * Pointers in them must be valid where the engine runs: for the CPU engine
 * host memory; for the GPU engine memory the GPU reaches (softnic then
 * allocates this state with the GPU engine's state allocator).
 */
#ifndef SOFTNIC_ENGINE_STATE_H
#define SOFTNIC_ENGINE_STATE_H

#include "gic/softnic.h"

enum {
	SNX_MAX_MR = 4096, /* MR slots; key = slot << 8 | generation */
	SNX_MAX_QP = 4096, /* QP table slots (the GPU engine scans it) */
};

/* One MR slot. Engines read it without a lock: registration writes the
 * fields and then releases key; deregistration clears key; a lookup
 * re-reads key after the fields so a concurrent change is never half-seen. */
typedef struct snx_mr {
	uint32_t key;      /* 0: free */
	uint32_t access;
	uint64_t addr;
	uint64_t len;
	uint32_t pd;       /* protection domain id */
	uint32_t generation;
} snx_mr;

/* snx_cq.mode: softnic_cq_attr.mode as given (enum softnic_cq_mode). */
enum {
	SNX_CQ_OI = SOFTNIC_CQ_OVERRUN_IGNORE, /* the consumer index is never read */
	SNX_CQ_CC = SOFTNIC_CQ_COLLAPSED,      /* every CQE goes to entry 0 */
};

typedef struct snx_cq {
	gic_cqe64 *cqes;
	uint32_t *dbrec;   /* consumer index, written by the consumer */
	uint32_t cqe_cnt;
	uint32_t cqn;
	uint32_t mode;     /* SNX_CQ_* (= SOFTNIC_CQ_*) */
	uint32_t pad0;
	/* Under lock (CQE writers: QPs of several engine threads, a peer's
	 * WRITE_IMM): */
	uint64_t pi;       /* CQEs written */
	uint64_t claimed;  /* slots claimed: pi plus the claims not yet written */
	uint64_t ci_seen;  /* consumer index last read from dbrec (extended) */
	uint32_t lock;
	/* Set (relaxed) by a writer that failed to take lock: a GPU engine
	 * warp that keeps the lock across passes (it is the CQ's only writer
	 * so far: engine_gpu.cu, "parked") lets it go at its next scan when it
	 * sees this; cleared by that warp before it lets go. A hint only:
	 * the lock alone decides who writes. */
	uint32_t want;
} snx_cq;

/* A receive queue: a QP's own (WQEs consumed in order) or a shared one
 * (SRQ: WQEs linked through their next segments). Its consumers are the
 * engines executing its senders' WQEs (one peer for an RQ, any number for
 * an SRQ), so they take lock around head and cons. */
typedef struct snx_rq {
	uint8_t *buf;      /* wqe_cnt WQEs of stride bytes */
	uint32_t *dbrec;   /* BE32(WQEs posted & 0xffff), written by the owner */
	uint32_t wqe_cnt;
	uint32_t stride;
	uint32_t max_sge;  /* data segments per WQE */
	uint32_t srqn;     /* 0: a QP's own RQ */
	uint32_t pd;
	/* Under lock: */
	uint32_t lock;
	uint32_t head;     /* SRQ: index of the next WQE to consume */
	uint32_t pad;
	uint64_t cons;     /* WQEs consumed */
} snx_rq;

/* The first error of a QP, recorded by the engine, formatted by the host. */
typedef struct snx_error {
	uint8_t syndrome;
	uint8_t vendor_syndrome;
	uint8_t opcode;
	uint8_t has_doorbell;  /* doorbell fields below are meaningful */
	uint16_t wqe_index;
	uint16_t db_index;
	uint32_t dbrec;
	uint32_t executed;
	uint8_t av_bytes;      /* a DCI's failed WQE: its AV form (0: none) */
	uint8_t pad[3];
	uint32_t dct_num;      /* ... and the DCT it named */
} snx_error;

/* Where the regions of another process's softnic (a GPU engine's peer,
 * gic/softnic_gpu_peer.h) are mapped in this process: one entry per MR
 * slot of that process's table. The host writes delta, then releases key
 * (the rkey the mapping was made for; 0: not mapped); the engine loads key
 * with acquire, then delta. */
typedef struct snx_peer_map {
	uint32_t key;
	uint32_t pad;
	int64_t delta;     /* this process's address minus the owner's */
} snx_peer_map;

enum snx_qp_link {
	SNX_QP_UNCONNECTED = 0,
	SNX_QP_CONNECTED = 1,
	SNX_QP_PEER_GONE = 2,
};

typedef struct snx_qp {
	uint8_t *sq_buf;   /* bb_cnt basic blocks */
	uint32_t *dbrec;
	uint64_t *db;
	uint32_t bb_cnt;
	uint32_t qpn;
	uint32_t pd;
	uint32_t link;     /* enum snx_qp_link; peer valid when CONNECTED */
	snx_cq *send_cq;
	snx_cq *recv_cq;
	struct snx_qp *peer;
	/* The peer's softnic when it is another one (a QP of another process
	 * of a multi-process job, gic/softnic_shm.h): rkeys resolve in its MR
	 * table. NULL: the peer is on this softnic. */
	struct snx_shared *peer_sh;
	snx_rq *rq;        /* receives (its own RQ or an SRQ); NULL: none */
	uint32_t flags;    /* SOFTNIC_QP_* */
	uint32_t rnr_retry; /* 0..6 retries after a receiver-not-ready; 7: forever */
	uint32_t rights;   /* SOFTNIC_ACCESS_REMOTE_* this QP grants as responder
			    * (its senders read it once per pass) */
	uint32_t pad0;

	/* Engine-private progress. */
	uint64_t last_db;  /* doorbell value seen last */
	uint64_t cons;     /* BBs executed */
	uint64_t target;   /* BBs announced by doorbell + doorbell record */
	uint32_t in_error; /* released once err is complete */
	uint8_t pending_synd; /* doorbell error the next WQE completes with */
	uint8_t pending_vs;
	uint8_t watching;  /* a doorbell is ahead of the record (snx_take_doorbell) */
	uint8_t pad;
	uint16_t watch_need; /* the record value that covers the watched doorbell */
	uint16_t pad2;
	uint32_t rnr_tries; /* receiver-not-ready answers to the WQE at cons */
	uint64_t watch_deadline; /* ns: when the watch gives up */
	uint64_t rnr_next_ns;   /* ns: when the WQE at cons may retry */
	snx_error err;
	/* Read by this QP's senders on a receiver-not-ready answer only (kept
	 * out of the lines above, which every pass reads). */
	uint64_t rnr_timer_ns; /* what this QP, as receiver, asks senders to wait */
	/* DC. A DCT's access key (set before the QP is published). A DCI's
	 * last DCT lookup (engine-private): valid while the QP table's
	 * generation is still dc_gen. A DCI points peer at the DCT of the WQE
	 * it executes (it has no peer of its own). */
	uint64_t dc_key;
	struct snx_qp *dc_cache;
	uint32_t dc_cache_num;
	uint32_t dc_cache_gen;
	/* A peer in another process served by this GPU engine
	 * (gic/softnic_gpu_peer.h): peer and peer_sh then point at that
	 * process's mirrors of its QP and MR table (CUDA IPC mapped here), and
	 * remote addresses, which are the owner's, are moved by this map.
	 * NULL: the peer's memory is this process's. */
	const snx_peer_map *peer_map;
} snx_qp;

/* What every engine shares: the MR table, the mode, the counters. */
typedef struct snx_shared {
	snx_mr mrs[SNX_MAX_MR];
	snx_qp *qps[SNX_MAX_QP]; /* every live QP; NULL: free slot */
	uint32_t nqp_slots;      /* slots in use are below this */
	uint32_t table_gen;      /* bumped (release) after every change of qps */
	uint32_t mr_epoch;       /* bumped (release) by every deregistration */
	uint32_t strict;
	uint32_t stop;     /* engines exit when set */
	/* 1: every submitter and CQ consumer is a thread of the engine's GPU,
	 * so doorbells, doorbell records and CQEs synchronize at GPU scope
	 * (queues in GPU memory); 0: system scope. */
	uint32_t gpu_scope;
	uint32_t pad;
	uint64_t db_watch_ns;    /* how long a doorbell ahead of its record is watched */
} snx_shared;

#endif /* SOFTNIC_ENGINE_STATE_H */
