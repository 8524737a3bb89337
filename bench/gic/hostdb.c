/*
 * bench/gic/hostdb.c - the host thread that rings doorbells for WQEs other
 * threads built (hostdb.h).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "hostdb.h"

enum { HOSTDB_IDLE_YIELD = 256, HOSTDB_CLOCK_EVERY = 1024 };

int gic_hostdb_init(gic_hostdb *h, const gic_sq *views, int nqps, const uint64_t *progress,
		    int cpu, int yield)
{
	if (nqps < 1 || nqps > GIC_HOSTDB_MAX_QPS)
		return EINVAL;
	memset(h, 0, sizeof(*h));
	h->nqps = nqps;
	h->progress = progress;
	h->cpu = cpu;
	h->yield = yield;
	for (int q = 0; q < nqps; q++) {
		h->db[q] = views[q].db;
		h->qpn[q] = views[q].qpn;
		/* Acquire: pairs with a poster's release of an earlier run. */
		h->rung[q] = gic_ld_acquire_sys_u64(&progress[(size_t)q * GIC_HOSTDB_STRIDE]);
	}
	return 0;
}

int gic_hostdb_init_forward(gic_hostdb *h, const gic_sq *views, int nqps,
			    const uint64_t *progress, int cpu, int yield)
{
	int rc = gic_hostdb_init(h, views, nqps, progress, cpu, yield);

	h->forward = 1;
	return rc;
}

static int pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	if (cpu >= CPU_SETSIZE)
		return EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The ringer: a pass reads every progress word and rings each QP whose
 * word moved; it ends at the targets, the stop flag or the deadline. */
static void *ringer_main(void *arg)
{
	gic_hostdb *h = arg;
	unsigned idle = 0, passes = 0;

	h->rc = pin_self(h->cpu);
	while (!h->rc) {
		int done = 1, moved = 0;

		for (int q = 0; q < h->nqps; q++) {
			/* Acquires the poster's WQEs and record (its release). */
			uint64_t v = gic_ld_acquire_sys_u64(&h->progress[(size_t)q * GIC_HOSTDB_STRIDE]);

			if (v != h->rung[q]) {
				/* Releases what the acquire above saw (the WQEs, the
				 * record) before the doorbell the engine acquires. */
				gic_st_release_sys_u64(h->db[q], h->forward ? v
								    : gic_doorbell_value(h->qpn[q], v));
				h->rung[q] = v;
				h->rings++;
				moved = 1;
			}
			if (h->forward || h->rung[q] < h->target[q])
				done = 0; /* forwarding: only the stop ends it */
		}
		if (moved)
			h->t_last_ns = gic_now_ns();
		if (done)
			break;
		/* Acquire: nothing is published with the flag; it only ends the loop. */
		if (__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
			if (!h->forward)
				h->rc = ECANCELED;
			else if (moved && gic_now_ns() <= h->deadline_ns)
				continue; /* one more pass: nothing may be left behind */
			else if (moved)
				h->rc = ETIMEDOUT; /* posters still publishing at the limit */
			break;
		}
		if (++passes % HOSTDB_CLOCK_EVERY == 0 && gic_now_ns() > h->deadline_ns) {
			h->rc = ETIMEDOUT;
			break;
		}
		idle = moved ? 0 : idle + 1;
		if (h->yield && idle >= HOSTDB_IDLE_YIELD) {
			idle = 0;
			sched_yield();
		} else {
			gic_cpu_relax();
		}
	}
	return NULL;
}

int gic_hostdb_start(gic_hostdb *h, const uint64_t *target, uint64_t timeout_ns)
{
	for (int q = 0; q < h->nqps; q++)
		h->target[q] = target[q];
	h->stop = 0;
	h->rc = 0;
	h->rings = 0;
	h->t_last_ns = gic_now_ns();
	h->deadline_ns = h->t_last_ns + timeout_ns;
	if (pthread_create(&h->tid, NULL, ringer_main, h))
		return EAGAIN;
	h->started = 1;
	return 0;
}

void gic_hostdb_stop(gic_hostdb *h)
{
	/* Release: pairs with the ringer's acquire (orders nothing else). */
	__atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
}

int gic_hostdb_join(gic_hostdb *h, const char *who)
{
	if (!h->started)
		return EINVAL;
	pthread_join(h->tid, NULL);
	h->started = 0;
	if (h->rc == ETIMEDOUT && h->forward) {
		fprintf(stderr, "gic %s: host doorbell ringer: still forwarding doorbells for %d "
			"QPs at its time limit (the posters never finished)\n", who, h->nqps);
	} else if (h->rc == ETIMEDOUT) {
		for (int q = 0; q < h->nqps; q++)
			if (h->rung[q] < h->target[q]) {
				fprintf(stderr, "gic %s: host doorbell ringer: QP %d (qpn 0x%x) published "
					"up to BB %llu of %llu within the time limit\n", who, q,
					h->qpn[q], (unsigned long long)h->rung[q],
					(unsigned long long)h->target[q]);
				break;
			}
	} else if (h->rc && h->rc != ECANCELED) {
		fprintf(stderr, "gic %s: host doorbell ringer: pinning to CPU %d: %s\n", who, h->cpu,
			strerror(h->rc));
	}
	return h->rc;
}
