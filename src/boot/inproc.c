/*
 * In-process bootstrap: PEs are threads; a mutex, a condition variable on
 * CLOCK_MONOTONIC, and a generation-counted barrier.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "boot_internal.h"

struct gic_boot_group {
	int size;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int arrived;          /* PEs in the current barrier */
	uint64_t generation;  /* completed barriers */
	int handles;          /* PE handles alive */
	uint8_t *taken;       /* rank -> handle exists */
	uint8_t *buf;         /* allgather staging: size * len bytes */
	size_t buf_len;       /* len of the allgather in progress; 0: none */
	int failed;           /* a PE gave up waiting: later waits fail at once */
};

typedef struct inproc_boot {
	gic_boot base; /* first member */
	gic_boot_group *g;
} inproc_boot;

static const gic_boot_ops inproc_ops;

gic_boot_group *gic_boot_group_create(int size)
{
	gic_boot_group *g;
	pthread_condattr_t ca;

	if (size < 2 || size > 1024) {
		errno = EINVAL;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->taken = calloc((size_t)size, 1);
	if (!g->taken) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	g->size = size;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	return g;
}

int gic_boot_group_destroy(gic_boot_group *g)
{
	if (!g)
		return EINVAL;
	if (g->handles)
		return EBUSY;
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g->buf);
	free(g->taken);
	free(g);
	return 0;
}

gic_boot *gic_boot_inproc(gic_boot_group *g, int rank)
{
	inproc_boot *b;
	int rc = 0;

	if (!g || rank < 0 || rank >= g->size) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_lock(&g->lock);
	if (g->taken[rank])
		rc = EBUSY;
	else {
		g->taken[rank] = 1;
		g->handles++;
	}
	pthread_mutex_unlock(&g->lock);
	if (rc) {
		free(b);
		errno = rc;
		return NULL;
	}
	b->base.ops = &inproc_ops;
	b->base.rank = rank;
	b->base.size = g->size;
	b->g = g;
	return &b->base;
}

static void inproc_free(gic_boot *base)
{
	inproc_boot *b = (inproc_boot *)base;

	pthread_mutex_lock(&b->g->lock);
	b->g->taken[b->base.rank] = 0;
	b->g->handles--;
	pthread_mutex_unlock(&b->g->lock);
	free(b);
}

static struct timespec deadline_after(uint64_t ns)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += (time_t)(ns / 1000000000u);
	t.tv_nsec += (long)(ns % 1000000000u);
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* The barrier with g->lock held. The PE that completes it frees the
 * allgather staging when free_staging is set (every PE has copied out). */
static int barrier_locked(gic_boot_group *g, uint64_t timeout_ns, int free_staging)
{
	struct timespec until = deadline_after(timeout_ns);
	uint64_t gen = g->generation;

	if (g->failed)
		return ETIMEDOUT;
	if (++g->arrived == g->size) {
		g->arrived = 0;
		g->generation++;
		if (free_staging)
			g->buf_len = 0;
		pthread_cond_broadcast(&g->cond);
		return 0;
	}
	while (g->generation == gen && !g->failed) {
		if (pthread_cond_timedwait(&g->cond, &g->lock, &until) == ETIMEDOUT &&
		    g->generation == gen) {
			/* The group cannot finish this barrier any more. */
			g->failed = 1;
			pthread_cond_broadcast(&g->cond);
		}
	}
	return g->generation == gen ? ETIMEDOUT : 0;
}

static void timed_out(gic_boot *b, const char *what, uint64_t timeout_ns)
{
	gic_boot_set_error(b, "inproc %s: PE %d of %d: the group did not complete it within "
			   "%llu ms (a PE is missing or gave up earlier)", what, b->rank, b->size,
			   (unsigned long long)(timeout_ns / 1000000u));
}

static int inproc_barrier(gic_boot *base, uint64_t timeout_ns)
{
	inproc_boot *b = (inproc_boot *)base;
	int rc;

	pthread_mutex_lock(&b->g->lock);
	rc = barrier_locked(b->g, timeout_ns, 0);
	pthread_mutex_unlock(&b->g->lock);
	if (rc == ETIMEDOUT)
		timed_out(base, "barrier", timeout_ns);
	return rc;
}

/* Stages mine in the group buffer (sized by the first PE to arrive). */
static int stage_locked(gic_boot_group *g, int rank, const void *mine, size_t len)
{
	if (g->buf_len == 0) {
		uint8_t *buf = realloc(g->buf, (size_t)g->size * len);

		if (!buf)
			return ENOMEM;
		g->buf = buf;
		g->buf_len = len;
	}
	if (g->buf_len != len)
		return EINVAL;
	memcpy(g->buf + (size_t)rank * len, mine, len);
	return 0;
}

static int inproc_allgather(gic_boot *base, const void *mine, size_t len, void *all,
			    uint64_t timeout_ns)
{
	inproc_boot *b = (inproc_boot *)base;
	gic_boot_group *g = b->g;
	int rc;

	pthread_mutex_lock(&g->lock);
	/* Everyone stages, meets, copies out, meets again (so the staging
	 * buffer is free for the next allgather). */
	rc = stage_locked(g, base->rank, mine, len);
	if (rc)
		g->failed = 1; /* the others must not wait for a PE that left */
	if (!rc)
		rc = barrier_locked(g, timeout_ns, 0);
	if (!rc)
		memcpy(all, g->buf, (size_t)g->size * len);
	if (!rc)
		rc = barrier_locked(g, timeout_ns, 1);
	pthread_mutex_unlock(&g->lock);
	if (rc == ETIMEDOUT)
		timed_out(base, "allgather", timeout_ns);
	else if (rc == EINVAL)
		gic_boot_set_error(base, "inproc allgather: PE %d gave %zu bytes, another PE a "
				   "different length", base->rank, len);
	else if (rc)
		gic_boot_set_error(base, "inproc allgather: %s", strerror(rc));
	return rc;
}

static const gic_boot_ops inproc_ops = {
	.name = "inproc",
	.barrier = inproc_barrier,
	.allgather = inproc_allgather,
	.free = inproc_free,
};
