/*
 * mlx5 provider: the doorbell forwarder. Where the GPU may not store to
 * the NIC's doorbell page, device views point their doorbell at a shadow
 * word in host memory; this thread watches the shadows and stores each
 * new value to the real register. The GPU still builds the WQEs and
 * writes the doorbell record; the CPU adds one hop to each doorbell.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlx5_internal.h"

struct gic_dbfwd {
	gic_dbfwd_entry *e;
	int max;
	int n;              /* published with release; entries below n are ready */
	int stop;
	int done;
	uint64_t count;
	pthread_t thread;
	pthread_mutex_t add_lock;
};

int gic_dbfwd_step(gic_dbfwd_entry *e, int n)
{
	int fwd = 0;

	for (int i = 0; i < n; i++) {
		/* Acquire: the doorbell record the GPU stored before its
		 * shadow store is visible before we ring. */
		uint64_t v = __atomic_load_n(e[i].shadow, __ATOMIC_ACQUIRE);

		if (v == e[i].last)
			continue;
		/* Orders the load above before the register store, and
		 * (after it) drains the write-combining buffer as libmlx5
		 * does after a BlueFlame doorbell. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		/* One untorn 64-bit store (a plain mov/str on x86 and Arm,
		 * as an MMIO doorbell needs), atomic so that a test reading
		 * a fake register from another thread is race-free. */
		__atomic_store_n(e[i].reg, v, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		e[i].last = v;
		fwd++;
	}
	return fwd;
}

static void *fwd_main(void *arg)
{
	gic_dbfwd *f = arg;
	unsigned idle = 0;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		int n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
		int k = gic_dbfwd_step(f->e, n);

		if (k) {
			__atomic_fetch_add(&f->count, (uint64_t)k, __ATOMIC_RELAXED);
			idle = 0;
		} else if (++idle > 100000) {
			/* Long idle: yield the core now and then (adds up to
			 * a scheduler tick to the first doorbell after it). */
			sched_yield();
			idle = 0;
		} else {
			gic_cpu_relax();
		}
	}
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

gic_dbfwd *gic_dbfwd_start(int max_entries, int cpu)
{
	gic_dbfwd *f;
	int rc;

	if (max_entries < 1 || max_entries > 65536) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f || !(f->e = calloc((size_t)max_entries, sizeof(*f->e)))) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->max = max_entries;
	pthread_mutex_init(&f->add_lock, NULL);
	rc = pthread_create(&f->thread, NULL, fwd_main, f);
	if (rc) {
		pthread_mutex_destroy(&f->add_lock);
		free(f->e);
		free(f);
		errno = rc;
		return NULL;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_setaffinity_np(f->thread, sizeof(set), &set); /* best effort */
	}
	return f;
}

int gic_dbfwd_add(gic_dbfwd *f, const uint64_t *shadow, void *reg)
{
	int rc = 0;

	if (!f || !shadow || !reg)
		return EINVAL;
	pthread_mutex_lock(&f->add_lock);
	if (f->n >= f->max) {
		rc = ENOSPC;
	} else {
		gic_dbfwd_entry *e = &f->e[f->n];

		e->shadow = shadow;
		e->reg = reg;
		e->last = __atomic_load_n(shadow, __ATOMIC_ACQUIRE);
		/* Publishes the entry to the thread. */
		__atomic_store_n(&f->n, f->n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&f->add_lock);
	return rc;
}

uint64_t gic_dbfwd_count(const gic_dbfwd *f)
{
	return f ? __atomic_load_n(&f->count, __ATOMIC_RELAXED) : 0;
}

int gic_dbfwd_stop(gic_dbfwd *f, uint64_t timeout_ns)
{
	struct timespec dl;

	if (!f)
		return 0;
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)(timeout_ns / 1000000000ull);
	dl.tv_nsec += (long)(timeout_ns % 1000000000ull);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	if (pthread_timedjoin_np(f->thread, NULL, &dl))
		return ETIMEDOUT;
	pthread_mutex_destroy(&f->add_lock);
	free(f->e);
	free(f);
	return 0;
}
