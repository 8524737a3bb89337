/*
 * Completion events on the emulated device. softnic raises no interrupt,
 * so one watcher thread per process plays the NIC's event unit: while a
 * CQ with a completion channel is armed (ibv_req_notify_cq), it looks at
 * the CQE at the CQ's consumer index every EMU_EVENT_POLL_NS; when one is
 * there it disarms the CQ, queues it on its channel and makes the
 * channel's fd readable. ibv_get_cq_event takes the event (blocking on the
 * fd unless it is non-blocking); ibv_ack_cq_events acknowledges, and
 * ibv_destroy_cq waits for the acknowledgements of the events taken. As
 * with rdma-core, an event queued but never taken needs no acknowledgement:
 * a destroyed CQ's entries leave its channel's queue.
 * Solicited-only arming is treated as arming for every CQE (a superset: an
 * application polls its CQ after each event anyway).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

enum { EMU_EVENT_POLL_NS = 20000, EMU_CHANNEL_QUEUE = 1024 };

typedef struct emu_channel {
	struct ibv_comp_channel ch; /* first */
	pthread_mutex_t lock;
	struct ibv_cq *queue[EMU_CHANNEL_QUEUE]; /* CQs with an event not yet taken */
	uint32_t head, tail;
} emu_channel;

/* The watcher's list of CQs that have a channel. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t armed;    /* a CQ was armed */
	pthread_t thread;
	int running;
	emu_cq *cqs[4096];
	int n;
} w = { .lock = PTHREAD_MUTEX_INITIALIZER, .armed = PTHREAD_COND_INITIALIZER };

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	emu_channel *c;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	/* A counter that reads as the number of events not yet taken. */
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	c->ch.context = ctx;
	pthread_mutex_init(&c->lock, NULL);
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	emu_channel *c = (emu_channel *)ch;

	if (!ch)
		return EINVAL;
	if (ch->refcnt)
		return EBUSY; /* CQs still use it */
	close(ch->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

/* 1 when the CQE at the CQ's consumer index is the software's. */
static int cqe_ready(emu_cq *c)
{
	uint32_t ci = c->view.ci;
	const gic_cqe64 *e = &c->view.cqes[ci & (c->view.cqe_cnt - 1)];
	uint64_t tail = gic_ld_acquire_sys_u64((const uint64_t *)((const uint8_t *)e +
								   GIC_CQE_TAIL_OFFSET));

	return gic_cqe_sw_owned(tail, ci, c->view.cqe_cnt);
}

static void raise_event(emu_cq *c)
{
	emu_channel *ch = (emu_channel *)c->cq.channel;
	uint64_t one = 1;

	pthread_mutex_lock(&ch->lock);
	if (ch->tail - ch->head < EMU_CHANNEL_QUEUE) {
		ch->queue[ch->tail++ % EMU_CHANNEL_QUEUE] = &c->cq;
		if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
			ch->tail--; /* cannot happen with an eventfd below its maximum */
	}
	pthread_mutex_unlock(&ch->lock);
}

/* One look at every armed CQ; returns how many stay armed. */
static int watch_pass(void)
{
	int armed = 0;

	for (int i = 0; i < w.n; i++) {
		emu_cq *c = w.cqs[i];

		if (!c->armed)
			continue;
		/* The CQ's pollers hold this lock; the peek waits for them. */
		if (pthread_mutex_trylock(&c->lock)) {
			armed++;
			continue;
		}
		if (cqe_ready(c)) {
			c->armed = 0;
			raise_event(c);
		} else {
			armed++;
		}
		pthread_mutex_unlock(&c->lock);
	}
	return armed;
}

/* A service loop, not a wait: it sleeps on the condition until a CQ is
 * armed, and ends with the process. */
static void *watcher(void *arg)
{
	struct timespec gap = { 0, EMU_EVENT_POLL_NS };

	(void)arg;
	pthread_mutex_lock(&w.lock);
	for (;;) {
		if (!watch_pass()) {
			pthread_cond_wait(&w.armed, &w.lock);
			continue;
		}
		pthread_mutex_unlock(&w.lock);
		nanosleep(&gap, NULL);
		pthread_mutex_lock(&w.lock);
	}
	return NULL;
}

/* Adds a CQ with a channel to the watcher's list (emu_cq_attach_channel). */
int emu_events_add(emu_cq *c)
{
	int rc = 0;

	pthread_mutex_lock(&w.lock);
	if (w.n == (int)(sizeof(w.cqs) / sizeof(w.cqs[0])))
		rc = ENOSPC;
	else
		w.cqs[w.n++] = c;
	if (!rc && !w.running) {
		rc = pthread_create(&w.thread, NULL, watcher, NULL);
		if (!rc) {
			pthread_detach(w.thread);
			w.running = 1;
		} else {
			w.n--;
		}
	}
	pthread_mutex_unlock(&w.lock);
	return rc;
}

/* Clears c's events not yet taken from its channel's queue (each keeps its
 * count on the fd; ibv_get_cq_event passes over it). */
static void channel_forget(emu_cq *c)
{
	emu_channel *ch = (emu_channel *)c->cq.channel;

	pthread_mutex_lock(&ch->lock);
	for (uint32_t i = ch->head; i != ch->tail; i++)
		if (ch->queue[i % EMU_CHANNEL_QUEUE] == &c->cq)
			ch->queue[i % EMU_CHANNEL_QUEUE] = NULL;
	pthread_mutex_unlock(&ch->lock);
}

/* Takes c off the watcher's list (no event is raised for it from here on)
 * and out of its channel's queue. */
void emu_events_remove(emu_cq *c)
{
	pthread_mutex_lock(&w.lock);
	for (int i = 0; i < w.n; i++)
		if (w.cqs[i] == c)
			w.cqs[i] = w.cqs[--w.n];
	pthread_mutex_unlock(&w.lock);
	if (c->cq.channel)
		channel_forget(c);
}

int emu_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	emu_cq *c = (emu_cq *)cq;

	(void)solicited_only;
	if (!cq || !cq->channel)
		return EINVAL;
	pthread_mutex_lock(&w.lock);
	c->armed = 1;
	pthread_cond_signal(&w.armed);
	pthread_mutex_unlock(&w.lock);
	return 0;
}

/* One event off c's fd and queue: its CQ, counted as taken (under the
 * queue's lock, so that a destroy that cleared the queue has seen the
 * count), or NULL for one of a CQ destroyed since. 0 or -1 with errno. */
static int take_event(emu_channel *c, struct ibv_cq **cq)
{
	uint64_t n;

	/* Blocks until an event is there (or fails with EAGAIN when the
	 * application made the fd non-blocking). */
	if (read(c->ch.fd, &n, sizeof(n)) != sizeof(n))
		return -1;
	pthread_mutex_lock(&c->lock);
	*cq = c->queue[c->head++ % EMU_CHANNEL_QUEUE];
	if (*cq)
		((emu_cq *)*cq)->events_raised++; /* ibv_destroy_cq waits for its ack */
	/* The counter read took them all: give back the others. */
	if (n > 1) {
		n--;
		if (write(c->ch.fd, &n, sizeof(n)) != sizeof(n))
			n = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	emu_channel *c = (emu_channel *)ch;

	if (!ch || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	do {
		if (take_event(c, cq))
			return -1;
	} while (!*cq);
	*cq_context = (*cq)->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += n;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
