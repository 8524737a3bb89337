/*
 * bench/gic/hostdb.h - host-rung doorbells (the paper's "GPU submission is
 * not needed for peak rate": a host thread rings the doorbells for
 * GPU-built WQEs).
 *
 * The posters (GPU threads; host threads standing in for them in host
 * mode) own their queues as with gic_sq_publish_excl, but instead of
 * ringing they write the doorbell record and publish their producer
 * position to a progress word per QP (gic_hostdb_publish). One host thread,
 * the ringer (gic_hostdb_start), watches every progress word and, when one
 * moved, stores that QP's doorbell (gic_doorbell_value) with the position
 * it read. The posters never store a doorbell.
 *
 * Memory: progress words are host memory the posters reach (GPU mode:
 * pinned host memory mapped into the GPU), GIC_HOSTDB_STRIDE words apart
 * (one 64-byte line each, so QPs do not share a line). Doorbell words are
 * the QPs' own (gic_sq.db); the ringer must be able to store to them (GPU
 * engine: the fixture puts them in mapped pinned host memory, which the
 * engine reads through the mapping; gpu_env_cfg.host_doorbells).
 *
 * Ordering: poster: WQE stores and record, then a system-scope release of
 * the progress word; ringer: an acquire of the word, then a system-scope
 * release of the doorbell; the engine acquires the doorbell (at system
 * scope: the fixture tells softnic that host threads submit), so it sees
 * the record and the WQEs.
 *
 * Forwarding (gic_hostdb_init_forward): for posters whose own doorbell
 * store is redirected to the progress word (a shared queue's view with db
 * pointing there, the warp-cooperative and per-CTA rows), the words hold
 * doorbell values, not positions; the ringer copies each changed value to
 * the QP's doorbell and runs until gic_hostdb_stop, which is then its
 * normal end (rc 0): the posters' completions need every doorbell, so
 * once they have returned nothing is left to forward.
 *
 * Threads: one ringer per gic_hostdb; init, start, stop and join from one
 * controlling thread. The ringer ends when every QP has been rung up to its
 * target, when told to stop (ECANCELED), or at its deadline (ETIMEDOUT).
 * Errors: 0 or a positive errno.
 */
#ifndef GIC_BENCH_HOSTDB_H
#define GIC_BENCH_HOSTDB_H

#include <pthread.h>
#include <stdint.h>

#include "gic/post.h"

enum {
	GIC_HOSTDB_MAX_QPS = 64,
	GIC_HOSTDB_STRIDE = 8, /* uint64_t words between two QPs' progress words */
};

/* Exclusive owner: announces everything reserved so far to the ringer
 * (doorbell record, then the position) instead of ringing. */
GIC_HD void gic_hostdb_publish(gic_sq *sq, uint64_t *progress)
{
	gic_st_relaxed_sys_u32(sq->dbrec, gic_htobe32((uint32_t)sq->resv & 0xffffu));
	/* Releases the WQE stores and the record before the position: the
	 * ringer's acquire of it orders its doorbell after them. */
	gic_st_release_sys_u64(progress, sq->resv);
	sq->ready = sq->resv;
}

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gic_hostdb {
	int nqps;
	uint64_t *db[GIC_HOSTDB_MAX_QPS];       /* the QPs' doorbell words */
	uint32_t qpn[GIC_HOSTDB_MAX_QPS];
	const uint64_t *progress;               /* nqps words, GIC_HOSTDB_STRIDE apart */
	uint64_t rung[GIC_HOSTDB_MAX_QPS];      /* ringer: the last position rung per QP */
	uint64_t target[GIC_HOSTDB_MAX_QPS];    /* the run ends once each is rung */
	int cpu;                                /* the ringer's CPU; -1: not pinned */
	int yield;                              /* 1: sched_yield after idle passes
						 * (shared cores: host mode) */
	int forward;                            /* 1: words hold doorbell values (above) */
	uint64_t deadline_ns;
	int stop;                               /* gic_hostdb_stop: release store */
	int started;
	int rc;                                 /* the ringer's outcome */
	uint64_t t_last_ns;                     /* CLOCK_MONOTONIC of the last doorbell */
	uint64_t rings;                         /* doorbells stored */
	pthread_t tid;
} gic_hostdb;

/* Prepares a ringer for views[0..nqps) (their db and qpn) and their
 * progress words; each QP counts as rung up to its progress word's current
 * value. cpu: pin the ringer there (-1: not pinned); yield: see above.
 * EINVAL for nqps out of 1..GIC_HOSTDB_MAX_QPS. */
int gic_hostdb_init(gic_hostdb *h, const gic_sq *views, int nqps, const uint64_t *progress,
		    int cpu, int yield);

/* As gic_hostdb_init, for forwarding: progress[q * GIC_HOSTDB_STRIDE] is
 * where QP q's posters store their doorbell values; doorbells are the
 * views' own. */
int gic_hostdb_init_forward(gic_hostdb *h, const gic_sq *views, int nqps,
			    const uint64_t *progress, int cpu, int yield);

/* Starts the ringer until QP q has been rung up to target[q] for every q,
 * or timeout_ns passed. EAGAIN when the thread could not start. */
int gic_hostdb_start(gic_hostdb *h, const uint64_t *target, uint64_t timeout_ns);

/* Tells a started ringer to end now (after a poster failed). */
void gic_hostdb_stop(gic_hostdb *h);

/* Waits for the ringer; its outcome: 0, ECANCELED (stopped), ETIMEDOUT
 * (after a message naming the QP that fell short), or the pinning error. */
int gic_hostdb_join(gic_hostdb *h, const char *who);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_HOSTDB_H */
