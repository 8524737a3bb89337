/*
 * mini-proxy lifetime: attribute checks, rings, worker QPs, start and stop,
 * the error record, statistics and the producer views.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_internal.h"

/* ------------------------------------------------------------------ */
/* Ring memory: the caller's allocator, or zeroed host memory. */

static void *ring_alloc(const gic_proxy_attr *a, size_t size)
{
	void *p;

	if (a->ring_mem)
		return a->ring_mem->alloc(size, 64, a->ring_mem->ctx);
	p = aligned_alloc(64, (size + 63) & ~(size_t)63);
	if (p)
		memset(p, 0, size);
	return p;
}

static void ring_free(const gic_proxy_attr *a, void *p)
{
	if (!p)
		return;
	if (a->ring_mem)
		a->ring_mem->free(p, a->ring_mem->ctx);
	else
		free(p);
}

/* ------------------------------------------------------------------ */
/* Attributes. */

static int in_range(int v, int lo, int hi)
{
	return v >= lo && v <= hi;
}

/* Fills defaults into *a; returns 0 or EINVAL. */
static int check_attr(gic_proxy_attr *a)
{
	if (!a->log_ring_slots)
		a->log_ring_slots = PROXY_DEFAULT_LOG_SLOTS;
	if (!a->timeout_ms)
		a->timeout_ms = PROXY_DEFAULT_TIMEOUT_MS;
	if (!a->inflight)
		a->inflight = GIC_PROXY_DEFAULT_INFLIGHT;
	if (!a->signal_every)
		a->signal_every = 1;
	if (!a->local || !a->counters || !in_range(a->target_remote, 0, 1) ||
	    !a->target == !a->target_remote) /* a target here, or one of another process */
		return EINVAL;
	if (!in_range(a->workers, 1, GIC_PROXY_MAX_WORKERS) ||
	    !in_range(a->rings, a->workers, GIC_PROXY_MAX_RINGS) ||
	    !in_range(a->batch, 1, GIC_PROXY_MAX_BATCH) ||
	    !in_range(a->protocol, GIC_PROXY_BASELINE, GIC_PROXY_TUNED) ||
	    !in_range(a->counter_kind, GIC_PROXY_COUNTER_HOST, GIC_PROXY_COUNTER_GPU) ||
	    !in_range(a->log_ring_slots, 1, 16) || a->first_cpu < -1 ||
	    !in_range(a->warmup_ms, 0, 60000) || !in_range(a->idle_ms, 0, 600000) ||
	    !in_range(a->timeout_ms, 1, 600000) ||
	    !in_range(a->inflight, 1, GIC_PROXY_MAX_INFLIGHT) ||
	    !in_range(a->signal_every, 1, a->inflight) ||
	    !in_range(a->log_sq_bb, 0, PROXY_MAX_LOG_SQ_BB) ||
	    (a->log_sq_bb && (1 << a->log_sq_bb) < a->batch) ||
	    !in_range(a->idle_sleep_ns, 0, 999999999))
		return EINVAL;
	if (a->counter_cnt < 1 || a->counter_cnt > GIC_PROXY_DESC_MAX_COUNTERS)
		return EINVAL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* QPs. */

/* The data QP's size: attr.log_sq_bb, or room for K chains of B BBs. */
static int data_log_sq_bb(const gic_proxy_attr *a)
{
	int n = PROXY_MIN_LOG_SQ_BB;

	if (a->log_sq_bb)
		return a->log_sq_bb;
	while (n < PROXY_MAX_LOG_SQ_BB && (1 << n) < a->inflight * a->batch)
		n++;
	return n;
}

/* Records the failure of step on q's QP on nic (peer: the other end's
 * NIC, NULL when it is another process's) in the proxy's error record;
 * returns rc. */
static int qp_failed(gic_proxy *p, const char *step, int rc, gic_nic *nic, gic_nic *peer)
{
	snprintf(p->error, sizeof(p->error), "worker queue %s: %s (%s: %.200s; %s: %.200s)",
		 step, strerror(rc), nic->ops->name, gic_nic_error(nic),
		 peer ? peer->ops->name : "target", peer ? gic_nic_error(peer) : "another process's");
	return rc;
}

/* Connects q's QP (its record local) to the end whose record is remote
 * and takes the QP's host view; 0 or the provider's errno. */
static int qp_join(proxy_qp *q, const gic_conn_info *local, const gic_conn_info *remote)
{
	int rc = gic_nic_qp_connect(q->qp, local, remote);

	if (!rc)
		rc = gic_nic_qp_view(q->qp, GIC_VIEW_HOST, &q->sq, &q->cqv);
	q->connected = !rc;
	return rc;
}

/* A QP on nic with its send CQ and, unless peer is NULL (a target of
 * another process: gic_proxy_qp_connect joins it later), a peer QP on
 * peer (the same nic for a loopback pair) connected to it, and the QP's
 * host view. 0 or an errno, with the provider's account in the proxy's
 * error record. */
static int qp_open(gic_proxy *p, gic_nic *nic, gic_nic *peer, int log_sq_bb, int log_cqe,
		   proxy_qp *q)
{
	gic_qp_attr qa = { .log_sq_bb = log_sq_bb, .type = GIC_QP_RC };
	gic_conn_info li, ri;
	int rc;

	q->cq = gic_nic_cq_create(nic, log_cqe);
	q->peer_cq = q->cq && peer ? gic_nic_cq_create(peer, log_cqe) : NULL;
	if (!q->cq || (peer && !q->peer_cq))
		return qp_failed(p, "CQ", errno ? errno : ENOMEM, nic, peer);
	qa.send_cq = q->cq;
	q->qp = gic_nic_qp_create(nic, &qa);
	qa.send_cq = q->peer_cq;
	q->peer_qp = q->qp && peer ? gic_nic_qp_create(peer, &qa) : NULL;
	if (!q->qp || (peer && !q->peer_qp))
		return qp_failed(p, "QP", errno ? errno : ENOMEM, nic, peer);
	if (!peer)
		return 0;
	if ((rc = gic_nic_qp_local(q->qp, &li)) || (rc = gic_nic_qp_local(q->peer_qp, &ri)) ||
	    (rc = qp_join(q, &li, &ri)) || (rc = gic_nic_qp_connect(q->peer_qp, &ri, &li)))
		return qp_failed(p, "connect", rc, nic, peer);
	return 0;
}

/* Destroys what qp_open made (QPs before their CQs). */
static void qp_close(proxy_qp *q)
{
	gic_nic_qp_destroy(q->qp);
	gic_nic_qp_destroy(q->peer_qp);
	gic_nic_cq_destroy(q->cq);
	gic_nic_cq_destroy(q->peer_cq);
	memset(q, 0, sizeof(*q));
}

static int worker_open(gic_proxy *p, proxy_worker *w)
{
	const gic_proxy_attr *a = &p->attr;
	int rc;

	w->proxy = p;
	w->cpu = -1;
	for (int r = w->index; r < a->rings; r += a->workers)
		w->rings[w->nrings++] = r;
	rc = qp_open(p, a->local, a->target, data_log_sq_bb(a), PROXY_LOG_CQE, &w->data);
	/* target NULL: a target of another process (check_attr) */
	if (rc || a->counter_kind != GIC_PROXY_COUNTER_GPU)
		return rc;
	rc = qp_open(p, a->local, a->local, PROXY_LOG_COUNTER_SQ_BB, PROXY_LOG_COUNTER_CQE,
		     &w->counter);
	if (rc)
		return rc;
	/* The NIC writes the fetched value here: ring memory, which a GPU
	 * engine reaches as well as a CPU one. */
	w->fetch_buf = ring_alloc(a, 64);
	if (!w->fetch_buf)
		return ENOMEM;
	w->fetch_mr = gic_nic_reg_mr(a->local, w->fetch_buf, 8, GIC_ACCESS_LOCAL_WRITE);
	if (w->fetch_mr)
		return 0;
	rc = errno ? errno : ENOMEM;
	snprintf(p->error, sizeof(p->error), "worker fetch buffer: %s (%.400s)", strerror(rc),
		 gic_nic_error(a->local));
	return rc;
}

static void worker_close(proxy_worker *w)
{
	qp_close(&w->data);
	qp_close(&w->counter);
	gic_nic_dereg_mr(w->fetch_mr);
	if (w->fetch_buf)
		ring_free(&w->proxy->attr, w->fetch_buf);
	w->fetch_mr = NULL;
	w->fetch_buf = NULL;
}

/* ------------------------------------------------------------------ */
/* Create and destroy. */

static int rings_open(gic_proxy *p)
{
	const gic_proxy_attr *a = &p->attr;

	for (int r = 0; r < a->rings; r++) {
		proxy_ring *ring = &p->rings[r];

		ring->log_slot_cnt = (uint32_t)a->log_ring_slots;
		ring->slot_cnt = 1u << ring->log_slot_cnt;
		ring->slots = ring_alloc(a, (size_t)ring->slot_cnt * sizeof(gic_proxy_desc));
		ring->ctl = ring_alloc(a, sizeof(gic_proxy_ring_ctl));
		if (!ring->slots || !ring->ctl)
			return ENOMEM;
	}
	return 0;
}

static void rings_close(gic_proxy *p)
{
	for (int r = 0; r < GIC_PROXY_MAX_RINGS; r++) {
		ring_free(&p->attr, p->rings[r].slots);
		ring_free(&p->attr, p->rings[r].ctl);
		p->rings[r].slots = NULL;
		p->rings[r].ctl = NULL;
	}
}

/* Why this thread's latest gic_proxy_create() failed. */
static _Thread_local char create_error[GIC_PROXY_ERR_LEN];

gic_proxy *gic_proxy_create(const gic_proxy_attr *attr)
{
	gic_proxy *p;
	int rc;

	if (!attr) {
		snprintf(create_error, sizeof(create_error), "no attributes");
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->attr = *attr;
	pthread_mutex_init(&p->err_lock, NULL);
	rc = check_attr(&p->attr);
	p->timeout_ns = (uint64_t)p->attr.timeout_ms * 1000000ull;
	if (!rc)
		rc = rings_open(p);
	for (int i = 0; !rc && i < p->attr.workers; i++) {
		p->workers[i].index = i;
		rc = worker_open(p, &p->workers[i]);
	}
	if (rc) {
		snprintf(create_error, sizeof(create_error), "%s",
			 p->error[0] ? p->error : rc == EINVAL ? "an attribute out of range"
							       : strerror(rc));
		gic_proxy_destroy(p);
		errno = rc;
		return NULL;
	}
	create_error[0] = '\0';
	return p;
}

const char *gic_proxy_create_error(void)
{
	return create_error;
}

void gic_proxy_destroy(gic_proxy *p)
{
	if (!p)
		return;
	gic_proxy_stop(p);
	for (int i = 0; i < GIC_PROXY_MAX_WORKERS; i++)
		worker_close(&p->workers[i]);
	rings_close(p);
	pthread_mutex_destroy(&p->err_lock);
	free(p);
}

/* ------------------------------------------------------------------ */
/* A target of another process. */

int gic_proxy_qp_local(const gic_proxy *p, int worker, gic_conn_info *out)
{
	if (!p->attr.target_remote || worker < 0 || worker >= p->attr.workers)
		return EINVAL;
	return gic_nic_qp_local(p->workers[worker].data.qp, out);
}

int gic_proxy_qp_connect(gic_proxy *p, int worker, const gic_conn_info *remote)
{
	proxy_qp *q;
	gic_conn_info li;
	int rc;

	if (!p->attr.target_remote || worker < 0 || worker >= p->attr.workers)
		return EINVAL;
	q = &p->workers[worker].data;
	if (q->connected || p->state != PROXY_CREATED)
		return EALREADY;
	rc = gic_nic_qp_local(q->qp, &li);
	if (!rc)
		rc = qp_join(q, &li, remote);
	if (!rc)
		return 0;
	pthread_mutex_lock(&p->err_lock); /* the readers may run on any thread */
	if (!p->has_error) {
		p->has_error = 1;
		p->failure = (gic_proxy_failure){ .err = rc, .worker = worker, .ring = -1 };
		qp_failed(p, "connect", rc, p->attr.local, NULL);
	}
	pthread_mutex_unlock(&p->err_lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Start and stop. */

static void join_workers(gic_proxy *p)
{
	/* Release: the workers see the stop flag; they read nothing else of ours. */
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < p->attr.workers; i++) {
		if (p->workers[i].running) {
			pthread_join(p->workers[i].thread, NULL);
			p->workers[i].running = 0;
		}
	}
}

/* Waits until every worker reached its loop or one failed to pin. */
static int wait_workers_ready(gic_proxy *p)
{
	uint64_t deadline = gic_now_ns() +
			    (uint64_t)(p->attr.idle_ms + p->attr.warmup_ms) * 1000000ull +
			    p->timeout_ns;
	uint32_t spins = 0;

	for (;;) {
		/* Acquire: a worker's error record (start_err) or its cpu
		 * (ready) before we report them. */
		int err = __atomic_load_n(&p->start_err, __ATOMIC_ACQUIRE);

		if (err)
			return err;
		if (__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE) == p->attr.workers)
			return 0;
		if (gic_now_ns() > deadline)
			return ETIMEDOUT;
		gic_proxy_backoff(&spins);
	}
}

int gic_proxy_start(gic_proxy *p)
{
	int rc = 0;

	if (p->state != PROXY_CREATED)
		return EALREADY;
	for (int i = 0; i < p->attr.workers; i++)
		if (!p->workers[i].data.connected)
			return ENOTCONN;
	p->state = PROXY_RUNNING;
	for (int i = 0; !rc && i < p->attr.workers; i++) {
		proxy_worker *w = &p->workers[i];

		rc = pthread_create(&w->thread, NULL, proxy_worker_main, w);
		w->running = !rc;
	}
	if (!rc)
		rc = wait_workers_ready(p);
	if (rc) {
		join_workers(p);
		p->state = PROXY_STOPPED;
	}
	return rc;
}

int gic_proxy_stop(gic_proxy *p)
{
	gic_proxy_failure f;

	if (p->state != PROXY_RUNNING)
		return 0;
	join_workers(p);
	p->state = PROXY_STOPPED;
	if (gic_proxy_error_info(p, &f) == 0 && f.err == ETIMEDOUT)
		return ETIMEDOUT;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Errors. */

void proxy_record_failure(proxy_worker *w, const gic_proxy_failure *f, const char *fmt, ...)
{
	gic_proxy *p = w->proxy;
	va_list ap;

	pthread_mutex_lock(&p->err_lock);
	if (!p->has_error) {
		p->has_error = 1;
		p->failure = *f;
		p->failure.worker = w->index;
		va_start(ap, fmt);
		vsnprintf(p->error, sizeof(p->error), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&p->err_lock);
	w->failed = 1;
	/* Release: orders everything this worker completed (counter bumps,
	 * ring progress) before the flag producers acquire. */
	for (int i = 0; i < w->nrings; i++)
		__atomic_store_n(&p->rings[w->rings[i]].ctl->failed, 1, __ATOMIC_RELEASE);
}

const char *gic_proxy_error(const gic_proxy *p)
{
	gic_proxy *q = (gic_proxy *)p;
	const char *text;

	pthread_mutex_lock(&q->err_lock);
	text = q->has_error ? q->error : "";
	pthread_mutex_unlock(&q->err_lock);
	return text; /* set once, never changed after */
}

int gic_proxy_error_info(const gic_proxy *p, gic_proxy_failure *out)
{
	gic_proxy *q = (gic_proxy *)p;
	int rc = ENOENT;

	pthread_mutex_lock(&q->err_lock);
	if (q->has_error) {
		*out = q->failure;
		rc = 0;
	}
	pthread_mutex_unlock(&q->err_lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Views, statistics, cores. */

int gic_proxy_ring_view(const gic_proxy *p, int ring, gic_proxy_ring *out)
{
	const proxy_ring *r;

	if (ring < 0 || ring >= p->attr.rings)
		return EINVAL;
	r = &p->rings[ring];
	memset(out, 0, sizeof(*out));
	out->slots = r->slots;
	out->ctl = r->ctl;
	out->slot_cnt = r->slot_cnt;
	out->log_slot_cnt = r->log_slot_cnt;
	out->protocol = (uint32_t)p->attr.protocol;
	out->index = (uint32_t)ring;
	out->next_slot = r->slots;
	out->phase_bit = (uint64_t)gic_proxy_phase(0, r->log_slot_cnt) << GIC_PROXY_PHASE_SHIFT;
	out->room_end = r->slot_cnt;
	return 0;
}

static void stats_add(gic_proxy_stats *sum, const gic_proxy_stats *s)
{
	sum->requests += __atomic_load_n(&s->requests, __ATOMIC_RELAXED);
	sum->chains += __atomic_load_n(&s->chains, __ATOMIC_RELAXED);
	sum->counter_updates += __atomic_load_n(&s->counter_updates, __ATOMIC_RELAXED);
	sum->bound_stalls += __atomic_load_n(&s->bound_stalls, __ATOMIC_RELAXED);
	sum->sq_full_stalls += __atomic_load_n(&s->sq_full_stalls, __ATOMIC_RELAXED);
	sum->multi_reclaims += __atomic_load_n(&s->multi_reclaims, __ATOMIC_RELAXED);
	sum->nops += __atomic_load_n(&s->nops, __ATOMIC_RELAXED);
	if (__atomic_load_n(&s->inflight_max, __ATOMIC_RELAXED) > sum->inflight_max)
		sum->inflight_max = __atomic_load_n(&s->inflight_max, __ATOMIC_RELAXED);
	for (int i = 0; i <= GIC_PROXY_MAX_BATCH; i++)
		sum->chain_len[i] += __atomic_load_n(&s->chain_len[i], __ATOMIC_RELAXED);
}

int gic_proxy_get_stats(const gic_proxy *p, int worker, gic_proxy_stats *out)
{
	if (worker >= p->attr.workers)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < p->attr.workers; i++) {
		if (worker < 0 || worker == i)
			stats_add(out, &p->workers[i].stats);
	}
	return 0;
}

int gic_proxy_worker_cpu(const gic_proxy *p, int worker)
{
	if (worker < 0 || worker >= p->attr.workers)
		return -1;
	return __atomic_load_n(&p->workers[worker].cpu, __ATOMIC_RELAXED); /* a number only */
}

long gic_proxy_worker_mhz(const gic_proxy *p, int worker)
{
	return proxy_cpu_mhz(gic_proxy_worker_cpu(p, worker));
}

const char *gic_proxy_worker_mhz_text(const gic_proxy *p, int worker, char *buf, size_t len)
{
	long mhz = gic_proxy_worker_mhz(p, worker);

	if (mhz < 0)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%ld MHz", mhz);
	return buf;
}
