/*
 * gic/proxy.h - mini-proxy: CPU workers that turn ring descriptors into
 * RDMA writes (paper §4.1 "Reducing the proxy enqueue cost", §4.2).
 *
 * Producers (GPU threads; host threads in the tests) enqueue 16-byte
 * descriptors (gic/proxy_desc.h) into rings (gic/proxy_ring.h). T workers,
 * each a thread pinned to a core and owning one RC QP of the producers' PE
 * (connected to a peer QP in the target PE; both made through the NIC
 * provider, gic/provider.h: softnic or mlx5), poll their rings round-robin
 * (ring r belongs to worker r % T), chain up to B descriptors into one post
 * (B WQEs, one doorbell, the last WQE signaled), and keep up to K such
 * chains posted (inflight) while they take more. A worker reclaims
 * completions as they arrive, without waiting for a particular chain: each
 * CQE retires the send queue up to the WQE it names, and every chain that
 * ends at or before that point is complete (one CQE may complete several
 * chains: the unsignaled ones before it, signal_every > 1). For each
 * completed chain, oldest first, the worker bumps each request's
 * completion counter and publishes the rings' progress (which frees the
 * slots). With K chains posted, or no room in its send queue for the next
 * chain, a worker polls completions until there is room (stalls, counted
 * in the stats); K = 1 is post-then-wait (before the inflight attribute).
 *
 * Completion counters are 64-bit words the producers wait on
 * (gic_proxy_wait_counter). Two kinds:
 *  - GIC_PROXY_COUNTER_HOST: host memory; the worker adds to it with a
 *    release read-modify-write after the CQE.
 *  - GIC_PROXY_COUNTER_GPU: memory registered by the producer side (in
 *    the local PE, with REMOTE_ATOMIC), where the producer polls without
 *    reading host memory: the worker posts an ATOMIC_FA through the NIC,
 *    on a second QP of its own looped back into the local PE, after the CQE.
 *    In CI the region is host memory; on a GPU it is device memory.
 *
 * A worker that sees an error CQE (or a descriptor it cannot serve) counts
 * the requests completed before it, records which request failed (ring,
 * position, descriptor fields) and the syndrome, marks its rings failed
 * (producers waiting on them get EIO) and stops; other workers go on.
 *
 * The target PE may be another process's (attr.target_remote): then
 * only the workers' ends are made here, and the caller swaps connection
 * records with the target's process (gic_proxy_qp_local,
 * gic_proxy_qp_connect), as for any QP of two processes.
 *
 * Lifetime: create (rings and QPs exist, producers may enqueue), start
 * (workers run), stop (workers finish the chain they posted and exit),
 * destroy. Workers post through the QPs' host views (gic/post.h: the
 * WQEs written into the ring and the doorbell rung by the worker, which
 * is what ibv_post_send does inside libmlx5, without its per-call work);
 * a softnic PE must have engine threads. Both PEs must outlive the proxy.
 *
 * Errors: functions return 0 or a positive errno; constructors return NULL
 * and set errno. Not thread-safe: call create/start/stop/destroy from one
 * thread; the readers (error, stats, frequency) from any thread.
 */
#ifndef GIC_PROXY_H
#define GIC_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "gic/provider.h"
#include "gic/proxy_ring.h"
#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gic_proxy gic_proxy;

enum {
	GIC_PROXY_MAX_WORKERS = 16,
	GIC_PROXY_MAX_RINGS = 32,
	GIC_PROXY_MAX_BATCH = 16,
	GIC_PROXY_MAX_INFLIGHT = 32,
	GIC_PROXY_DEFAULT_INFLIGHT = 8,
	GIC_PROXY_ERR_LEN = 512,
};

enum gic_proxy_counter_kind {
	GIC_PROXY_COUNTER_HOST = 0, /* host word, release add by the worker */
	GIC_PROXY_COUNTER_GPU = 1,  /* producer-registered word, NIC ATOMIC_FA */
};

typedef struct gic_proxy_attr {
	gic_nic *local;        /* the producers' PE: worker QPs, source, counters */
	gic_nic *target;       /* the target PE: peer QPs, destination (a softnic PE
				* sharing local's softnic, or a second mlx5 context);
				* NULL with target_remote */
	int target_remote;     /* 1: the target PE is another process's (target NULL):
				* each worker's data QP is made on local only, and the
				* caller connects it to a QP that the target's process
				* made (gic_proxy_qp_local, gic_proxy_qp_connect) before
				* gic_proxy_start; 0: both ends made here, on target */
	int workers;           /* T: 1..16 */
	int rings;             /* R: T..32; ring r is served by worker r % T */
	int batch;             /* B: 1..16 descriptors chained into one post */
	int protocol;          /* GIC_PROXY_BASELINE or GIC_PROXY_TUNED: what the views'
				* gic_proxy_enqueue() does; workers serve both alike
				* (validity is always the descriptor's phase bit) */
	int counter_kind;      /* GIC_PROXY_COUNTER_* */
	int log_ring_slots;    /* ring of 2^n slots, 1..16; 0: 256 slots */
	int first_cpu;         /* worker w pinned to core first_cpu + w; -1: unpinned */
	int idle_ms;           /* start(): each worker sleeps this long first (0..600000; the
				* paper's cold workers follow 45 s idle); 0: none */
	int warmup_ms;         /* start(): then spins its core this long (0..60000; the
				* paper's warm workers follow 20 s of load); 0: none */
	int inflight;          /* K: chains a worker keeps posted (1..32); 0: 8 */
	int signal_every;      /* S: every S-th chain signaled (1..K; also the chain that
				* reaches K, one that would leave more than half the send
				* queue unsignaled, and a signaled NOP when the worker
				* finds its rings empty); 0: 1 (every chain) */
	int log_sq_bb;         /* data send queue of 2^n BBs (2^n >= B, n <= 14); 0: room
				* for K chains of B, at least 64 */
	int timeout_ms;        /* a worker's limit for any wait (a completion while it has
				* chains posted, queue space); 0: 2000 */
	int idle_sleep_ns;     /* 0: workers spin (a core each); 1..999999999: after 64
				* empty polls a worker sleeps this long (cores shared
				* with other busy threads, e.g. CI) */

	/* Destination: a region of the target PE registered on target with
	 * REMOTE_WRITE; a descriptor's dst_offset is relative to dst_addr. */
	uint64_t dst_addr;
	uint32_t dst_rkey;
	/* Source of pointer requests: registered on local; a descriptor's
	 * source offset is relative to src_addr. Unused by inline requests. */
	uint64_t src_addr;
	uint32_t src_lkey;

	/* Completion counters: counter_cnt (1..256) 64-bit words, zeroed by
	 * the caller. COUNTER_GPU: registered on local with REMOTE_ATOMIC;
	 * counter_rkey is that registration's rkey. */
	uint64_t *counters;
	uint32_t counter_cnt;
	uint32_t counter_rkey;

	/* Allocator of the ring slots, control lines and COUNTER_GPU fetch
	 * buffers (pinned host memory mapped into the GPU, for GPU producers
	 * or a GPU engine); NULL: host memory. */
	const softnic_allocator *ring_mem;
} gic_proxy_attr;

/* Creates the rings (zeroed: every slot invalid) and, per worker, its QP
 * connected to a peer QP on target (and, for COUNTER_GPU, a loopback QP
 * pair on local and an 8-byte fetch buffer). The workers do not run yet;
 * producers may already enqueue. NULL with errno EINVAL for an attribute
 * out of range, ENOMEM, or the provider's error (whose text
 * gic_proxy_create_error() keeps). */
gic_proxy *gic_proxy_create(const gic_proxy_attr *attr);

/* Why the calling thread's latest gic_proxy_create() failed ("" after a
 * success): which queue or buffer, and the provider's account. */
const char *gic_proxy_create_error(void);

/* attr.target_remote: worker's data QP's connection record (its QP
 * number, LID/GID; addr and rkey are the caller's to fill), to hand to
 * the target's process. 0, or EINVAL (a bad worker number, or a proxy
 * without target_remote). */
int gic_proxy_qp_local(const gic_proxy *p, int worker, gic_conn_info *out);

/* attr.target_remote: connects worker's data QP to remote (the record of
 * the QP the target's process made for it) and takes its host view. 0;
 * EINVAL as gic_proxy_qp_local; EALREADY when connected before or after
 * start; or the provider's errno (gic_proxy_error() then says why). */
int gic_proxy_qp_connect(gic_proxy *p, int worker, const gic_conn_info *remote);

/* Starts the workers: each pins itself (when first_cpu >= 0), sleeps for
 * idle_ms, spins for warmup_ms, samples its core, and starts polling.
 * Returns once every worker polls: 0; EINVAL when a worker could not be
 * pinned (every worker is stopped again; gic_proxy_error() says which);
 * EALREADY when started before; ENOTCONN when a worker's data QP of a
 * target_remote proxy is not connected yet; ETIMEDOUT when the workers
 * did not report within idle_ms plus warmup_ms plus timeout_ms. */
int gic_proxy_start(gic_proxy *p);

/* Stops the workers: each finishes the chains it has posted (their CQEs,
 * counter updates, ring progress), leaves later descriptors in the rings,
 * and exits; stop joins them. Every wait in it has the timeout_ms
 * limit. Producers still waiting then time out (ETIMEDOUT). Returns 0
 * (also when not running), or ETIMEDOUT when the proxy's recorded error is
 * a worker that gave up waiting (a CQE, its counter QP draining). */
int gic_proxy_stop(gic_proxy *p);

/* Stops (if running) and frees the proxy, its QPs, CQs and rings. NULL is
 * a no-op. The counters and the registered regions stay the caller's. */
void gic_proxy_destroy(gic_proxy *p);

/* Fills a fresh producer view of ring `ring` (head 0). Use one view per
 * ring, created before any enqueue; copy it where the producers run.
 * EINVAL for a bad ring number. */
int gic_proxy_ring_view(const gic_proxy *p, int ring, gic_proxy_ring *out);

/* The first error of any worker ("" if none): the worker, the request
 * (ring, position, slot, descriptor fields) and the syndrome text. */
const char *gic_proxy_error(const gic_proxy *p);

/* The first error, as fields. */
typedef struct gic_proxy_failure {
	int err;              /* EIO (error CQE), EINVAL (descriptor refused),
			       * ETIMEDOUT (no CQE in time), or the pinning errno */
	int worker;
	int ring;             /* -1 when no request is involved */
	uint64_t position;    /* the request's ring position */
	gic_proxy_desc desc;  /* the request's descriptor, phase included */
	uint8_t syndrome;     /* GIC_SYND_* of the error CQE; 0 otherwise */
	uint8_t vendor_syndrome;
} gic_proxy_failure;

/* Copies the first error into *out: 0, or ENOENT when there was none. */
int gic_proxy_error_info(const gic_proxy *p, gic_proxy_failure *out);

/* Counters since create, summed over workers (worker < 0) or of one. */
typedef struct gic_proxy_stats {
	uint64_t requests;        /* descriptors completed and counted */
	uint64_t chains;          /* posts: one doorbell each (one CQE each when S = 1) */
	uint64_t chain_len[GIC_PROXY_MAX_BATCH + 1]; /* chains by length */
	uint64_t counter_updates; /* counter adds (host RMWs or NIC atomics) */
	uint64_t inflight_max;    /* most chains posted at once (summed: the largest) */
	uint64_t bound_stalls;    /* a chain ready, K posted: waited for a completion */
	uint64_t sq_full_stalls;  /* a chain ready, no send-queue room: waited */
	uint64_t multi_reclaims;  /* CQEs that completed more than one chain */
	uint64_t nops;            /* signaled NOPs closing an unsignaled tail */
} gic_proxy_stats;

/* Fills *out: EINVAL for a bad worker number. */
int gic_proxy_get_stats(const gic_proxy *p, int worker, gic_proxy_stats *out);

/* The core worker `worker` was pinned to, or where it ran when it started
 * polling when unpinned; -1 before start or for a bad number. */
int gic_proxy_worker_cpu(const gic_proxy *p, int worker);

/* The current clock of the worker's core in MHz, read from
 * /sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq; -1 when unknown
 * (no such file, or no core known yet). */
long gic_proxy_worker_mhz(const gic_proxy *p, int worker);

/* Writes "<MHz> MHz" or "unknown" for the worker's core into buf; returns
 * buf. */
const char *gic_proxy_worker_mhz_text(const gic_proxy *p, int worker, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GIC_PROXY_H */
