/*
 * softnic objects: the device, protection domains, memory regions, CQs and
 * QPs, and the queue memory behind them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm_gpu.h" /* softnic_shm_arena */
#include "softnic_internal.h"
#include "devmem.h"
#include "wire.h"

void softnic_set_error(softnic *nic, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&nic->lock);
	va_start(ap, fmt);
	vsnprintf(nic->last_error, sizeof(nic->last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&nic->lock);
}

const char *softnic_last_error(const softnic *nic)
{
	return nic->last_error;
}

static void list_init(obj_link *head)
{
	head->prev = head->next = head;
}

/* Adds o to the list at head; the caller holds nic->lock. */
static void list_add(obj_link *head, obj_link *o)
{
	o->next = head->next;
	o->prev = head;
	head->next->prev = o;
	head->next = o;
}

static void list_del(obj_link *o)
{
	o->prev->next = o->next;
	o->next->prev = o->prev;
}

/* An object's user count, read under the lock its writers take. */
static int users_of(softnic *nic, const int *users)
{
	int n;

	pthread_mutex_lock(&nic->lock);
	n = *users;
	pthread_mutex_unlock(&nic->lock);
	return n;
}

static void unlink_obj(softnic *nic, obj_link *o)
{
	pthread_mutex_lock(&nic->lock);
	list_del(o);
	pthread_mutex_unlock(&nic->lock);
}

/* Zeroed memory aligned to align; NULL with errno set on failure. */
static void *zalloc_aligned(size_t align, size_t size)
{
	void *p = NULL;
	int rc = posix_memalign(&p, align, size);

	if (rc) {
		errno = rc;
		return NULL;
	}
	memset(p, 0, size);
	return p;
}

/* Engine state through the backend's allocator, in the shared-memory arena
 * of a multi-process softnic, or in zeroed host memory. */
static void *state_alloc(softnic *nic, size_t size)
{
	if (nic->shm)
		return softnic_shm_alloc(nic->shm, size, SOFTNIC_CACHELINE);
	if (nic->backend.state_alloc)
		return nic->backend.state_alloc(size, nic->backend.ctx);
	return zalloc_aligned(SOFTNIC_CACHELINE, size);
}

static void state_free(softnic *nic, void *p)
{
	if (!p)
		return;
	if (nic->shm)
		softnic_shm_free(nic->shm, p);
	else if (nic->backend.state_free)
		nic->backend.state_free(p, nic->backend.ctx);
	else
		free(p);
}

/* Queue memory through the user's allocator, or zeroed host memory. */
static void *queue_alloc(softnic *nic, size_t size, size_t align)
{
	const softnic_allocator *a = nic->attr.queue_mem;

	return a ? a->alloc(size, align, a->ctx) : zalloc_aligned(align, size);
}

/* Tells the allocator that softnic has initialised [p, p + size). */
static void queue_prepared(softnic *nic, void *p, size_t size)
{
	const softnic_allocator *a = nic->attr.queue_mem;

	if (a && a->prepared)
		a->prepared(p, size, a->ctx);
}

static void queue_free(softnic *nic, void *p)
{
	const softnic_allocator *a = nic->attr.queue_mem;

	if (!p)
		return;
	if (a)
		a->free(p, a->ctx);
	else
		free(p);
}

/* ------------------------------------------------------------------ */
/* Queue memory the caller provides (gic/softnic.h, "Queues in caller
 * memory"). */

/* 0 when [p, p + len) lies in this PE's arena of a shared-memory softnic,
 * or the softnic is not one; EINVAL otherwise. */
static int qmem_in_arena(softnic *nic, const void *p, size_t len)
{
	void *base;
	size_t bytes;
	uintptr_t lo, a = (uintptr_t)p;

	if (!nic->shm)
		return 0;
	if (softnic_shm_arena(nic, &base, &bytes))
		return EINVAL;
	lo = (uintptr_t)base;
	return a >= lo && a - lo <= bytes && len <= bytes - (a - lo) ? 0 : EINVAL;
}

/* 0 when m is NULL memory (softnic allocates) or caller memory of at
 * least need bytes aligned to align (in the arena of a shared-memory
 * softnic); EINVAL with the reason as the last error, naming call and
 * what. */
static int qmem_check(softnic *nic, const char *call, const char *what, const softnic_qmem *m,
		      size_t need, size_t align)
{
	if (!m->addr)
		return 0;
	if (m->len < need)
		softnic_set_error(nic, "%s: the %s in caller memory at %p has %zu bytes; it needs "
				  "%zu", call, what, m->addr, m->len, need);
	else if ((uintptr_t)m->addr & (align - 1))
		softnic_set_error(nic, "%s: the %s in caller memory at %p is not aligned to %zu "
				  "bytes", call, what, m->addr, align);
	else if ((uintptr_t)m->addr + m->len < (uintptr_t)m->addr)
		softnic_set_error(nic, "%s: the %s in caller memory at %p: %zu bytes wrap the "
				  "address space", call, what, m->addr, m->len);
	else if (qmem_in_arena(nic, m->addr, m->len))
		softnic_set_error(nic, "%s: the %s in caller memory [%p, +%zu) is not in this PE's "
				  "shared arena: a shared-memory softnic takes queues only from "
				  "softnic_shared_alloc", call, what, m->addr, m->len);
	else
		return 0;
	return EINVAL;
}

/* The memory of one queue buffer of size bytes: the caller's (m->addr,
 * its first size bytes zeroed when init; *caller |= bit) or softnic's own
 * (at least a cache line aligned to align, zeroed by its allocator). NULL
 * when softnic's allocation fails. */
static void *qmem_take(softnic *nic, const softnic_qmem *m, size_t size, size_t align, int init,
		       uint32_t *caller, uint32_t bit)
{
	if (!m->addr)
		return queue_alloc(nic, size < SOFTNIC_CACHELINE ? SOFTNIC_CACHELINE : size, align);
	*caller |= bit;
	if (init)
		memset(m->addr, 0, size);
	return m->addr;
}

/* Gives back a queue buffer: softnic's own to its allocator; caller
 * memory (bit set in caller) stays the caller's. */
static void qmem_give_back(softnic *nic, void *p, uint32_t caller, uint32_t bit)
{
	if (!(caller & bit))
		queue_free(nic, p);
}

/* Tells the allocator that softnic has initialised its own buffer p. */
static void qmem_prepared(softnic *nic, void *p, size_t size, uint32_t caller, uint32_t bit)
{
	if (!(caller & bit))
		queue_prepared(nic, p, size);
}

softnic *softnic_open_ext(const softnic_attr *attr, const softnic_backend *backend,
			  softnic_shm *shm)
{
	softnic_attr def = { .engine_threads = 1 };
	softnic *nic;

	if (!attr)
		attr = &def;
	if (attr->engine_threads < 0 || attr->engine_threads > 64 ||
	    (backend && attr->engine_threads)) {
		errno = EINVAL;
		return NULL;
	}
	nic = zalloc_aligned(SOFTNIC_CACHELINE, sizeof(*nic));
	if (!nic)
		return NULL;
	nic->attr = *attr;
	if (backend)
		nic->backend = *backend;
	nic->shm = shm;
	nic->next_qpn = 0x100;
	nic->next_cqn = 0x80;
	nic->next_srqn = 0x40;
	nic->next_pd = shm ? softnic_shm_first_pd(shm) : 1;
	nic->nengines = attr->engine_threads ? attr->engine_threads : 1;
	pthread_mutex_init(&nic->lock, NULL);
	list_init(&nic->pds);
	list_init(&nic->mrs_list);
	list_init(&nic->cqs);
	list_init(&nic->srqs);
	nic->engines = zalloc_aligned(SOFTNIC_CACHELINE, sizeof(engine) * nic->nengines);
	nic->shared = state_alloc(nic, sizeof(snx_shared));
	if (!nic->engines || !nic->shared) {
		free(nic->engines);
		state_free(nic, nic->shared);
		free(nic);
		errno = ENOMEM;
		return NULL;
	}
	nic->shared->strict = (uint32_t)attr->strict;
	nic->shared->db_watch_ns = attr->doorbell_watch_ns ? attr->doorbell_watch_ns
							   : SOFTNIC_DB_WATCH_NS;
	for (int i = 0; i < nic->nengines; i++) {
		nic->engines[i].nic = nic;
		nic->engines[i].index = i;
		pthread_mutex_init(&nic->engines[i].lock, NULL);
	}
	if (attr->engine_threads && softnic_engines_start(nic)) {
		int saved = errno;

		free(nic->engines);
		state_free(nic, nic->shared);
		free(nic);
		errno = saved;
		return NULL;
	}
	return nic;
}

softnic *softnic_open_backend(const softnic_attr *attr, const softnic_backend *backend)
{
	return softnic_open_ext(attr, backend, NULL);
}

softnic *softnic_open(const softnic_attr *attr)
{
	return softnic_open_backend(attr, NULL);
}

void softnic_close(softnic *nic)
{
	if (!nic)
		return;
	if (nic->shm)
		softnic_shm_stop(nic);
	softnic_engines_stop(nic);
	softnic_wire_close(nic);
	if (nic->backend.stop)
		nic->backend.stop(nic, nic->backend.ctx);
	if (nic->peer_hooks && nic->peer_hooks->stop)
		nic->peer_hooks->stop(nic);
	/* Every QP first: a destroy takes the locks of every engine. */
	for (int e = 0; e < nic->nengines; e++)
		while (nic->engines[e].nqps)
			softnic_qp_destroy(nic->engines[e].qps[0]);
	for (int e = 0; e < nic->nengines; e++)
		pthread_mutex_destroy(&nic->engines[e].lock);
	while (nic->srqs.next != &nic->srqs)
		softnic_srq_destroy((softnic_srq *)nic->srqs.next);
	while (nic->mrs_list.next != &nic->mrs_list)
		softnic_dereg_mr((softnic_mr *)nic->mrs_list.next);
	while (nic->cqs.next != &nic->cqs)
		softnic_cq_destroy((softnic_cq *)nic->cqs.next);
	while (nic->pds.next != &nic->pds)
		softnic_pd_free((softnic_pd *)nic->pds.next);
	softnic_devmem_release(nic); /* the engines are stopped: nothing copies now */
	if (nic->peer_hooks && nic->peer_hooks->release)
		nic->peer_hooks->release(nic);
	state_free(nic, nic->shared);
	pthread_mutex_destroy(&nic->lock);
	free(nic->engines);
	if (nic->backend.release)
		nic->backend.release(nic->backend.ctx);
	if (nic->shm)
		softnic_shm_release(nic->shm);
	softnic_wire_release(nic);
	free(nic);
}

void softnic_stats_add(softnic_stats *sum, const softnic_stats *st)
{
	sum->wqes_executed += __atomic_load_n(&st->wqes_executed, __ATOMIC_RELAXED);
	sum->cqes_written += __atomic_load_n(&st->cqes_written, __ATOMIC_RELAXED);
	sum->error_cqes += __atomic_load_n(&st->error_cqes, __ATOMIC_RELAXED);
	sum->strict_violations += __atomic_load_n(&st->strict_violations, __ATOMIC_RELAXED);
	sum->cq_full_stalls += __atomic_load_n(&st->cq_full_stalls, __ATOMIC_RELAXED);
	sum->rnr_naks += __atomic_load_n(&st->rnr_naks, __ATOMIC_RELAXED);
	sum->doorbell_watches += __atomic_load_n(&st->doorbell_watches, __ATOMIC_RELAXED);
}

void softnic_get_stats(const softnic *nic, softnic_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (int e = 0; e < nic->nengines; e++)
		softnic_stats_add(out, &nic->engines[e].stats);
	if (nic->backend.add_stats)
		nic->backend.add_stats(nic, out, nic->backend.ctx);
}

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions. */

softnic_pd *softnic_pd_alloc(softnic *nic)
{
	softnic_pd *pd;

	if (!nic) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->nic = nic;
	pthread_mutex_lock(&nic->lock);
	pd->id = nic->next_pd++;
	list_add(&nic->pds, &pd->link);
	pthread_mutex_unlock(&nic->lock);
	return pd;
}

int softnic_pd_free(softnic_pd *pd)
{
	if (!pd)
		return EINVAL;
	if (pd->users) {
		softnic_set_error(pd->nic, "pd_free: %d MRs/QPs still use the PD", pd->users);
		return EBUSY;
	}
	unlink_obj(pd->nic, &pd->link);
	free(pd);
	return 0;
}

softnic_mr *softnic_reg_mr(softnic_pd *pd, void *addr, size_t len, int access)
{
	softnic *nic;
	softnic_mr *mr;

	if (!pd || !addr || !len || (access & ~0xf)) {
		if (pd)
			softnic_set_error(pd->nic, "reg_mr: bad argument (addr %p, len %zu, access 0x%x)",
					  addr, len, access);
		errno = EINVAL;
		return NULL;
	}
	nic = pd->nic;
	if (nic->shm && softnic_shm_check_mr(nic, addr, len, access)) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	pthread_mutex_lock(&nic->lock);
	for (uint32_t s = 1; s < SNX_MAX_MR; s++) {
		snx_mr *slot = &nic->shared->mrs[s];

		if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED))
			continue;
		slot->generation = (slot->generation + 1) & 0xff;
		__atomic_store_n(&slot->access, (uint32_t)access, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->addr, (uint64_t)(uintptr_t)addr, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->len, (uint64_t)len, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->pd, pd->id, __ATOMIC_RELAXED);
		mr->nic = nic;
		mr->slot = s;
		mr->key = (s << 8) | slot->generation;
		/* Publishes the fields above to lock-free lookups. */
		__atomic_store_n(&slot->key, mr->key, __ATOMIC_RELEASE);
		pd->users++;
		list_add(&nic->mrs_list, &mr->link);
		pthread_mutex_unlock(&nic->lock);
		if (nic->peer_hooks && nic->peer_hooks->mr_added)
			nic->peer_hooks->mr_added(nic, mr, addr, len);
		return mr;
	}
	pthread_mutex_unlock(&nic->lock);
	free(mr);
	softnic_set_error(nic, "reg_mr: all %d memory-region slots in use", SNX_MAX_MR - 1);
	errno = ENOSPC;
	return NULL;
}

int softnic_dereg_mr(softnic_mr *mr)
{
	softnic *nic;
	snx_mr *slot;

	if (!mr)
		return EINVAL;
	nic = mr->nic;
	slot = &nic->shared->mrs[mr->slot];
	if (nic->peer_hooks && nic->peer_hooks->mr_gone)
		nic->peer_hooks->mr_gone(nic, mr); /* peers first: the slot stays ours until then */
	pthread_mutex_lock(&nic->lock);
	for (obj_link *l = nic->pds.next; l != &nic->pds; l = l->next)
		if (((softnic_pd *)l)->id == slot->pd)
			((softnic_pd *)l)->users--;
	__atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
	/* Tells engines that keep MR caches to drop them. */
	__atomic_fetch_add(&nic->shared->mr_epoch, 1, __ATOMIC_RELEASE);
	list_del(&mr->link);
	pthread_mutex_unlock(&nic->lock);
	free(mr);
	return 0;
}

uint32_t softnic_pd_num(const softnic_pd *pd) { return pd->id; }
uint32_t softnic_mr_lkey(const softnic_mr *mr) { return mr->key; }
uint32_t softnic_mr_rkey(const softnic_mr *mr) { return mr->key; }

/* ------------------------------------------------------------------ */
/* Completion queues. */

static void cq_free(softnic_cq *cq)
{
	softnic *nic = cq->nic;

	if (cq->s) {
		qmem_give_back(nic, cq->s->cqes, cq->caller_mem, SOFTNIC_MEM_RING);
		qmem_give_back(nic, cq->s->dbrec, cq->caller_mem, SOFTNIC_MEM_DBREC);
	}
	state_free(nic, cq->s);
	free(cq);
}

softnic_cq *softnic_cq_create(softnic *nic, int log_cqe_cnt)
{
	softnic_cq_attr a = { .log_cqe_cnt = log_cqe_cnt };

	return softnic_cq_create_ex(nic, &a);
}

/* The smallest log_cqe_cnt a CQ of these modes may have. */
static int cq_min_log(uint32_t mode)
{
	return (mode & SOFTNIC_CQ_COLLAPSED) ? 0 : 1;
}

size_t softnic_cq_ring_bytes(const softnic_cq_attr *attr)
{
	if (!attr || attr->log_cqe_cnt < cq_min_log(attr->mode) || attr->log_cqe_cnt > 16)
		return 0;
	return ((size_t)1 << attr->log_cqe_cnt) * sizeof(gic_cqe64);
}

/* 0, or EINVAL with the reason as the softnic's last error. */
static int cq_attr_check(softnic *nic, const softnic_cq_attr *attr)
{
	const uint32_t modes = SOFTNIC_CQ_OVERRUN_IGNORE | SOFTNIC_CQ_COLLAPSED;
	size_t ring = softnic_cq_ring_bytes(attr);

	if (!ring || (attr->mode & ~modes) || (attr->flags & ~SOFTNIC_MEM_INIT)) {
		softnic_set_error(nic, "cq_create: log_cqe_cnt %d outside %d..16, or mode 0x%x or "
				  "flags 0x%x has unknown bits", attr->log_cqe_cnt,
				  cq_min_log(attr->mode), attr->mode, attr->flags);
		return EINVAL;
	}
	if (qmem_check(nic, "cq_create", "CQE ring", &attr->ring_mem, ring, SOFTNIC_RING_ALIGN) ||
	    qmem_check(nic, "cq_create", "doorbell record", &attr->dbrec_mem, SOFTNIC_DBREC_BYTES,
		       SOFTNIC_DBREC_ALIGN))
		return EINVAL;
	return 0;
}

/* The CQ's ring and record, initialised where softnic owns them or the
 * attr asks it to. 0 or ENOMEM. */
static int cq_queues(softnic_cq *cq, const softnic_cq_attr *attr)
{
	softnic *nic = cq->nic;
	snx_cq *s = cq->s;
	int init = !!(attr->flags & SOFTNIC_MEM_INIT);
	size_t ring = softnic_cq_ring_bytes(attr);

	s->cqes = qmem_take(nic, &attr->ring_mem, ring, 4096, init, &cq->caller_mem,
			    SOFTNIC_MEM_RING);
	s->dbrec = qmem_take(nic, &attr->dbrec_mem, SOFTNIC_DBREC_BYTES, SOFTNIC_CACHELINE, init,
			     &cq->caller_mem, SOFTNIC_MEM_DBREC);
	if (!s->cqes || !s->dbrec)
		return ENOMEM;
	/* Invalid, and with the owner bit of the hardware's side on the first
	 * pass (0xf1), so that a poller testing only the owner bit waits too. */
	if (init || !(cq->caller_mem & SOFTNIC_MEM_RING))
		for (uint32_t i = 0; i < s->cqe_cnt; i++)
			s->cqes[i].op_own = (uint8_t)(GIC_CQE_INVALID << 4 | GIC_CQE_OWNER_MASK);
	qmem_prepared(nic, s->cqes, ring, cq->caller_mem, SOFTNIC_MEM_RING);
	qmem_prepared(nic, s->dbrec, SOFTNIC_CACHELINE, cq->caller_mem, SOFTNIC_MEM_DBREC);
	return 0;
}

softnic_cq *softnic_cq_create_ex(softnic *nic, const softnic_cq_attr *attr)
{
	softnic_cq *cq;
	snx_cq *s;

	if (!nic || !attr || cq_attr_check(nic, attr)) {
		if (nic && !attr)
			softnic_set_error(nic, "cq_create: no attributes");
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->nic = nic;
	cq->s = s = state_alloc(nic, sizeof(snx_cq));
	if (s) {
		s->cqe_cnt = 1u << attr->log_cqe_cnt;
		s->mode = attr->mode;
	}
	if (!s || cq_queues(cq, attr)) {
		cq_free(cq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	s->cqn = nic->next_cqn++;
	list_add(&nic->cqs, &cq->link);
	pthread_mutex_unlock(&nic->lock);
	return cq;
}

int softnic_cq_destroy(softnic_cq *cq)
{
	if (!cq)
		return EINVAL;
	if (users_of(cq->nic, &cq->users)) {
		softnic_set_error(cq->nic, "cq_destroy: CQ 0x%x still used by %d QPs", cq->s->cqn,
				  cq->users);
		return EBUSY;
	}
	unlink_obj(cq->nic, &cq->link);
	cq_free(cq);
	return 0;
}

int softnic_cq_view(softnic_cq *cq, gic_cq *view)
{
	if (!cq || !view)
		return EINVAL;
	memset(view, 0, sizeof(*view));
	view->cqes = cq->s->cqes;
	view->dbrec = cq->s->dbrec;
	view->cqe_cnt = cq->s->cqe_cnt;
	view->cqn = cq->s->cqn;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queue pairs. */

/* A receive queue's state and ring (a QP's own, or an SRQ's), the ring
 * in m when the caller gives it (*caller |= bit); the doorbell record is
 * the caller's to set. */
static snx_rq *rq_alloc(softnic *nic, uint32_t wqe_cnt, uint32_t stride, uint32_t max_sge,
			uint32_t pd, const softnic_qmem *m, int init, uint32_t *caller, uint32_t bit)
{
	snx_rq *rq = state_alloc(nic, sizeof(snx_rq));

	if (!rq)
		return NULL;
	rq->wqe_cnt = wqe_cnt;
	rq->stride = stride;
	rq->max_sge = max_sge;
	rq->pd = pd;
	rq->buf = qmem_take(nic, m, (size_t)wqe_cnt * stride, 4096, init, caller, bit);
	if (!rq->buf) {
		state_free(nic, rq);
		return NULL;
	}
	return rq;
}

static void rq_free(softnic *nic, snx_rq *rq, uint32_t caller, uint32_t bit)
{
	if (!rq)
		return;
	qmem_give_back(nic, rq->buf, caller, bit);
	state_free(nic, rq);
}

/* The smallest power of two at least v. */
static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* A QP's receive stride: rq_max_sge data segments (0: 1), a power of two. */
static uint32_t qp_rq_stride(const softnic_qp_attr *a)
{
	return pow2_at_least(GIC_SEG_SIZE * (a->rq_max_sge ? (uint32_t)a->rq_max_sge : 1));
}

size_t softnic_qp_sq_bytes(const softnic_qp_attr *attr)
{
	if (!attr || attr->log_sq_bb < 1 || attr->log_sq_bb > 14)
		return 0;
	return ((size_t)1 << attr->log_sq_bb) * GIC_SEND_WQE_BB;
}

size_t softnic_qp_rq_bytes(const softnic_qp_attr *attr)
{
	if (!attr || attr->log_rq_wqe < 1 || attr->log_rq_wqe > 15 || attr->rq_max_sge < 0 ||
	    attr->rq_max_sge > SOFTNIC_MAX_SGE)
		return 0;
	return ((size_t)1 << attr->log_rq_wqe) * qp_rq_stride(attr);
}

static void qp_free(softnic_qp *qp)
{
	softnic *nic = qp->nic;

	if (qp->s) {
		qmem_give_back(nic, qp->s->sq_buf, qp->caller_mem, SOFTNIC_MEM_RING);
		qmem_give_back(nic, qp->dbrec_base, qp->caller_mem, SOFTNIC_MEM_DBREC);
		qmem_give_back(nic, qp->s->db, qp->caller_mem, SOFTNIC_MEM_DB);
		if (!qp->srq)
			rq_free(nic, qp->s->rq, qp->caller_mem, SOFTNIC_MEM_RQ);
	}
	state_free(nic, qp->s);
	free(qp);
}

/* Puts qp in the engine-visible QP table; ENOSPC when it is full. */
static int table_add(softnic *nic, snx_qp *qp)
{
	snx_shared *sh = nic->shared;

	for (uint32_t i = 0; i < SNX_MAX_QP; i++) {
		if (sh->qps[i])
			continue;
		/* Publishes the initialised QP to engines scanning the table. */
		__atomic_store_n(&sh->qps[i], qp, __ATOMIC_RELEASE);
		if (i >= sh->nqp_slots)
			__atomic_store_n(&sh->nqp_slots, i + 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&sh->table_gen, 1, __ATOMIC_RELEASE);
		return 0;
	}
	return ENOSPC;
}

static void table_remove(softnic *nic, snx_qp *qp)
{
	for (uint32_t i = 0; i < nic->shared->nqp_slots; i++)
		if (nic->shared->qps[i] == qp)
			__atomic_store_n(&nic->shared->qps[i], NULL, __ATOMIC_RELEASE);
	__atomic_fetch_add(&nic->shared->table_gen, 1, __ATOMIC_RELEASE);
}

/* The QP's send ring, doorbell record and register, and its own receive
 * queue, in caller memory where the attr gives it. 0 or ENOMEM. */
static int qp_queues(softnic_qp *qp, const softnic_qp_attr *attr)
{
	softnic *nic = qp->nic;
	snx_qp *s = qp->s;
	int init = !!(attr->flags & SOFTNIC_MEM_INIT);

	s->sq_buf = qmem_take(nic, &attr->sq_mem, softnic_qp_sq_bytes(attr), 4096, init,
			      &qp->caller_mem, SOFTNIC_MEM_RING);
	/* The doorbell record as mlx5's: the receive counter, then the send
	 * counter (MLX5_RCV_DBR, MLX5_SND_DBR). */
	qp->dbrec_base = qmem_take(nic, &attr->dbrec_mem, SOFTNIC_DBREC_BYTES, SOFTNIC_CACHELINE,
				   init, &qp->caller_mem, SOFTNIC_MEM_DBREC);
	/* A register of one BlueFlame buffer: a copy of a WQE of up to
	 * SOFTNIC_BF_SIZE bytes stays inside it; or the caller's (a UAR
	 * page's register), which softnic never writes. */
	s->db = qmem_take(nic, &attr->db_mem, SOFTNIC_BF_SIZE, SOFTNIC_BF_SIZE, 0, &qp->caller_mem,
			  SOFTNIC_MEM_DB);
	if (!s->sq_buf || !qp->dbrec_base || !s->db)
		return ENOMEM;
	s->dbrec = qp->dbrec_base + 1;
	if (attr->log_rq_wqe) {
		uint32_t sges = attr->rq_max_sge ? (uint32_t)attr->rq_max_sge : 1;

		s->rq = rq_alloc(nic, 1u << attr->log_rq_wqe, qp_rq_stride(attr), sges, qp->pd->id,
				 &attr->rq_mem, init, &qp->caller_mem, SOFTNIC_MEM_RQ);
		if (!s->rq)
			return ENOMEM;
		s->rq->dbrec = qp->dbrec_base;
		qmem_prepared(nic, s->rq->buf, softnic_qp_rq_bytes(attr), qp->caller_mem,
			      SOFTNIC_MEM_RQ);
	} else if (attr->srq) {
		s->rq = attr->srq->s;
	}
	qmem_prepared(nic, s->sq_buf, softnic_qp_sq_bytes(attr), qp->caller_mem, SOFTNIC_MEM_RING);
	qmem_prepared(nic, qp->dbrec_base, SOFTNIC_CACHELINE, qp->caller_mem, SOFTNIC_MEM_DBREC);
	qmem_prepared(nic, s->db, SOFTNIC_BF_SIZE, qp->caller_mem, SOFTNIC_MEM_DB);
	return 0;
}

/* Allocates the QP's engine state and queues. */
static int qp_alloc_state(softnic_qp *qp, const softnic_qp_attr *attr)
{
	softnic *nic = qp->nic;
	snx_qp *s = state_alloc(nic, sizeof(snx_qp));
	int rc;

	qp->s = s;
	if (!s)
		return ENOMEM;
	s->bb_cnt = 1u << attr->log_sq_bb;
	rc = qp_queues(qp, attr);
	if (rc)
		return rc;
	s->flags = attr->flags & (SOFTNIC_QP_NO_IMPLICIT_RECV | SOFTNIC_QP_SHARED_DB |
				  SOFTNIC_QP_DB_INDEX | SOFTNIC_QP_DCI | SOFTNIC_QP_DCT);
	s->dc_key = attr->dc_key;
	s->rights = SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ |
		    SOFTNIC_ACCESS_REMOTE_ATOMIC;
	s->rnr_retry = (uint32_t)attr->rnr_retry;
	s->rnr_timer_ns = softnic_rnr_timer_ns(attr->min_rnr_timer);
	s->pd = qp->pd->id;
	s->send_cq = attr->send_cq ? attr->send_cq->s : NULL; /* NULL: a DCT's */
	s->recv_cq = attr->recv_cq ? attr->recv_cq->s : NULL;
	/* The doorbell word starts at 0, a value no doorbell of this QP
	 * carries (its QP number is not 0), so the engine sees only real
	 * doorbells. */
	s->last_db = 0;
	return 0;
}

/* Adds qp to its engine's list and the engine-visible table. */
static int qp_attach(softnic_qp *qp)
{
	softnic *nic = qp->nic;
	engine *e = &nic->engines[qp->engine];
	int rc = 0;

	engine_lock_mgmt(e);
	if (e->nqps == SOFTNIC_MAX_QP_PER_ENGINE)
		rc = ENOSPC;
	else
		e->qps[e->nqps++] = qp;
	engine_unlock_mgmt(e);
	if (!rc) {
		pthread_mutex_lock(&nic->lock);
		rc = table_add(nic, qp->s);
		pthread_mutex_unlock(&nic->lock);
		if (rc) {
			engine_lock_mgmt(e);
			e->qps[--e->nqps] = NULL;
			engine_unlock_mgmt(e);
		}
	}
	if (rc)
		softnic_set_error(nic, "qp_create: engine %d or the QP table is full", qp->engine);
	return rc;
}

/* The RNR timer of IB code t (IB spec 9.7.5.2.8: 0 is the longest). */
uint64_t softnic_rnr_timer_ns(int t)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
		480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
		20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[t & 31] * 1000;
}

/* The QP's caller memory against the rules of gic/softnic.h; 0 or EINVAL
 * (the attributes themselves are already checked). */
static int qp_mem_check(softnic *nic, const softnic_qp_attr *a)
{
	if (qmem_check(nic, "qp_create", "send ring", &a->sq_mem, softnic_qp_sq_bytes(a),
		       SOFTNIC_RING_ALIGN) ||
	    qmem_check(nic, "qp_create", "receive ring", &a->rq_mem, softnic_qp_rq_bytes(a),
		       SOFTNIC_RING_ALIGN) ||
	    qmem_check(nic, "qp_create", "doorbell record", &a->dbrec_mem, SOFTNIC_DBREC_BYTES,
		       SOFTNIC_DBREC_ALIGN) ||
	    qmem_check(nic, "qp_create", "doorbell register", &a->db_mem, 8, 8))
		return EINVAL;
	return 0;
}

/* A DC QP's own rules (dc: its SOFTNIC_QP_DCI/DCT bits); NULL when met. */
static const char *qp_dc_check(const softnic_qp_attr *a, uint32_t dc)
{
	if (dc == (SOFTNIC_QP_DCI | SOFTNIC_QP_DCT))
		return "a QP is a DCI or a DCT, not both";
	if (dc == SOFTNIC_QP_DCI && (a->log_rq_wqe || a->srq))
		return "a DCI has no receive queue or SRQ";
	if (dc == SOFTNIC_QP_DCT && (!a->srq || a->log_rq_wqe))
		return "a DCT takes its receives from an SRQ (and has no receive queue of its own)";
	if (dc != SOFTNIC_QP_DCT && a->dc_key)
		return "dc_key is a DCT's";
	return NULL;
}

/* 0, or EINVAL with the reason as the softnic's last error. */
static int qp_attr_check(softnic_pd *pd, const softnic_qp_attr *a)
{
	uint32_t dc = a->flags & (SOFTNIC_QP_DCI | SOFTNIC_QP_DCT);
	const char *why = NULL;

	if ((!a->send_cq && dc != SOFTNIC_QP_DCT) || a->log_sq_bb < 1 || a->log_sq_bb > 14)
		why = "need a send CQ (a DCT may go without) and log_sq_bb in 1..14";
	else if (a->log_rq_wqe < 0 || a->log_rq_wqe > 15 || a->rq_max_sge < 0 ||
		 a->rq_max_sge > SOFTNIC_MAX_SGE)
		why = "log_rq_wqe outside 0..15 or rq_max_sge outside 0..16";
	else if (a->log_rq_wqe && a->srq)
		why = "a QP takes its receives from its own queue or from an SRQ, not both";
	else if (a->srq && a->srq->pd->nic != pd->nic)
		why = "the SRQ belongs to another softnic";
	else if ((a->log_rq_wqe || a->srq) && !a->recv_cq)
		why = "receives need a receive CQ";
	else if (a->rnr_retry < 0 || a->rnr_retry > 7 || a->min_rnr_timer < 0 ||
		 a->min_rnr_timer > 31)
		why = "rnr_retry outside 0..7 or min_rnr_timer outside 0..31";
	else if (a->flags & ~((uint32_t)SOFTNIC_QP_NO_IMPLICIT_RECV | SOFTNIC_QP_SHARED_DB |
			       SOFTNIC_QP_DB_INDEX | SOFTNIC_QP_DCI | SOFTNIC_QP_DCT | SOFTNIC_MEM_INIT))
		why = "unknown flags";
	else if (dc || a->dc_key)
		why = qp_dc_check(a, dc);
	else if (a->rq_mem.addr && !a->log_rq_wqe)
		why = "a receive ring in caller memory, but no receive queue of its own (log_rq_wqe 0)";
	if (why) {
		softnic_set_error(pd->nic, "qp_create: %s", why);
		return EINVAL;
	}
	return qp_mem_check(pd->nic, a);
}

/* Counts qp as a user (d = 1) or no longer one (d = -1) of its PD, CQs
 * and SRQ, under the lock that the destroy calls' checks take. */
static void qp_count_users(softnic_qp *qp, int d)
{
	pthread_mutex_lock(&qp->nic->lock);
	qp->pd->users += d;
	if (qp->send_cq)
		qp->send_cq->users += d;
	if (qp->recv_cq)
		qp->recv_cq->users += d;
	if (qp->srq)
		qp->srq->users += d;
	pthread_mutex_unlock(&qp->nic->lock);
}

/* 1 when a live QP of nic is numbered qpn (nic->lock held). */
static int qpn_in_use(const softnic *nic, uint32_t qpn)
{
	for (uint32_t i = 0; i < nic->shared->nqp_slots; i++)
		if (nic->shared->qps[i] && nic->shared->qps[i]->qpn == qpn)
			return 1;
	return 0;
}

/* The next QP number: counting up, or, within a wire block, the next one
 * not in use. 0 or ENOSPC. nic->lock held. */
static int qpn_next(softnic *nic, uint32_t *qpn)
{
	if (!nic->qpn_span) {
		*qpn = nic->next_qpn++;
		return 0;
	}
	for (uint32_t i = 0; i < nic->qpn_span; i++) {
		uint32_t n = nic->qpn_base + nic->next_qpn++ % nic->qpn_span;

		if (!qpn_in_use(nic, n)) {
			*qpn = n;
			return 0;
		}
	}
	softnic_set_error(nic, "qp_create: all %u QP numbers of the block are in use", nic->qpn_span);
	return ENOSPC;
}

softnic_qp *softnic_qp_create(softnic_pd *pd, const softnic_qp_attr *attr)
{
	softnic *nic;
	softnic_qp *qp;
	int rc;

	if (!pd || !attr || qp_attr_check(pd, attr)) {
		errno = EINVAL;
		return NULL;
	}
	nic = pd->nic;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->nic = nic;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	rc = qp_alloc_state(qp, attr);
	if (!rc) {
		pthread_mutex_lock(&nic->lock);
		rc = qpn_next(nic, &qp->s->qpn);
		qp->engine = nic->next_engine;
		nic->next_engine = (nic->next_engine + 1) % nic->nengines;
		pthread_mutex_unlock(&nic->lock);
		if (!rc)
			rc = qp_attach(qp);
	}
	if (rc) {
		qp_free(qp);
		errno = rc;
		return NULL;
	}
	qp_count_users(qp, 1);
	return qp;
}

/* Removes qp from its engine's list; the caller holds the engine lock. */
static void engine_remove_qp(engine *e, softnic_qp *qp)
{
	for (int i = 0; i < e->nqps; i++) {
		if (e->qps[i] == qp) {
			e->qps[i] = e->qps[--e->nqps];
			return;
		}
	}
}

int softnic_qp_destroy(softnic_qp *qp)
{
	softnic *nic;
	engine *e;

	if (!qp)
		return EINVAL;
	nic = qp->nic;
	e = &nic->engines[qp->engine];
	if ((qp->mirror || qp->gpu_peer) && nic->peer_hooks && nic->peer_hooks->qp_gone)
		nic->peer_hooks->qp_gone(nic, qp); /* its mirror goes; peers see it gone */
	engine_lock_mgmt(e);
	engine_remove_qp(e, qp);
	engine_unlock_mgmt(e);
	pthread_mutex_lock(&nic->lock);
	table_remove(nic, qp->s);
	pthread_mutex_unlock(&nic->lock);
	/* A DCI of any engine may have found this QP in the table (as its
	 * DCT, or while looking for one): once every engine has finished the
	 * pass under way, none still holds it (the table's generation moved). */
	if (!nic->backend.state_alloc)
		for (int i = 0; i < nic->nengines; i++) {
			engine_lock_mgmt(&nic->engines[i]);
			engine_unlock_mgmt(&nic->engines[i]);
		}
	if (qp->wire)
		softnic_wire_qp_destroyed(qp); /* its mirror goes too, so peer is cleared */
	if (qp->peer) {
		softnic_qp *peer = qp->peer;
		engine *pe = &nic->engines[peer->engine];

		/* A CPU engine reads the peer's link and pointer only under its
		 * lock, so the pointer can go (the state is freed below). A GPU
		 * engine reads them without a lock: it sees the release store
		 * of the link, and the pointer stays valid (its state lives in
		 * an arena freed only at close), so it is left in place. */
		engine_lock_mgmt(pe);
		__atomic_store_n(&peer->s->link, SNX_QP_PEER_GONE, __ATOMIC_RELEASE);
		if (!nic->backend.state_alloc)
			peer->s->peer = NULL;
		peer->peer = NULL;
		engine_unlock_mgmt(pe);
	} else if (qp->s->peer_sh && nic->shm) {
		softnic_shm_qp_destroyed(nic, qp); /* a QP of another process */
	}
	qp_count_users(qp, -1);
	qp_free(qp);
	return 0;
}

/* Takes the engine locks of two QPs in index order (no deadlock). */
static void lock_pair(softnic *nic, int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	engine_lock_mgmt(&nic->engines[lo]);
	if (hi != lo)
		engine_lock_mgmt(&nic->engines[hi]);
}

static void unlock_pair(softnic *nic, int a, int b)
{
	engine_unlock_mgmt(&nic->engines[a]);
	if (a != b)
		engine_unlock_mgmt(&nic->engines[b]);
}

int softnic_qp_connect(softnic_qp *a, softnic_qp *b)
{
	if (!a || !b || a->nic != b->nic)
		return EINVAL; /* a == b: a QP connected to itself, as RC loopback allows */
	if ((a->s->flags | b->s->flags) & (SOFTNIC_QP_DCI | SOFTNIC_QP_DCT)) {
		softnic_set_error(a->nic, "qp_connect: QP 0x%x or 0x%x is a DCI or DCT: DC QPs are "
				  "never connected", a->s->qpn, b->s->qpn);
		return EINVAL;
	}
	if (a->peer || b->peer || a->s->link || b->s->link) {
		softnic_set_error(a->nic, "qp_connect: QP 0x%x or 0x%x is already connected",
				  a->s->qpn, b->s->qpn);
		return EISCONN;
	}
	lock_pair(a->nic, a->engine, b->engine);
	a->peer = b;
	b->peer = a;
	a->s->peer = b->s;
	b->s->peer = a->s;
	/* Publishes the peer pointers before the link state engines check. */
	__atomic_store_n(&a->s->link, SNX_QP_CONNECTED, __ATOMIC_RELEASE);
	__atomic_store_n(&b->s->link, SNX_QP_CONNECTED, __ATOMIC_RELEASE);
	unlock_pair(a->nic, a->engine, b->engine);
	return 0;
}

uint32_t softnic_qp_num(const softnic_qp *qp) { return qp->s->qpn; }

int softnic_qp_set_rnr(softnic_qp *qp, int rnr_retry, int min_rnr_timer)
{
	engine *e;

	if (!qp || rnr_retry < -1 || rnr_retry > 7 || min_rnr_timer < -1 || min_rnr_timer > 31)
		return EINVAL;
	e = &qp->nic->engines[qp->engine];
	engine_lock_mgmt(e); /* the CPU engine reads them under this lock */
	if (rnr_retry >= 0)
		qp->s->rnr_retry = (uint32_t)rnr_retry;
	if (min_rnr_timer >= 0)
		qp->s->rnr_timer_ns = softnic_rnr_timer_ns(min_rnr_timer);
	engine_unlock_mgmt(e);
	return 0;
}

int softnic_qp_set_rights(softnic_qp *qp, int rights)
{
	const int remote = SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ |
			   SOFTNIC_ACCESS_REMOTE_ATOMIC;

	if (!qp || (rights & ~remote))
		return EINVAL;
	/* Requesters' engines read it without a lock, once per pass: a pass
	 * under way keeps the old rights, as a NIC's cached QP context would. */
	__atomic_store_n(&qp->s->rights, (uint32_t)rights, __ATOMIC_RELEASE);
	return 0;
}

int softnic_qp_to_error(softnic_qp *qp)
{
	engine *e;

	if (!qp)
		return EINVAL;
	e = &qp->nic->engines[qp->engine];
	engine_lock_mgmt(e);
	if (!qp->s->in_error) {
		qp->s->err.syndrome = GIC_SYND_WR_FLUSH_ERR;
		qp->s->err.wqe_index = (uint16_t)qp->s->cons;
		/* Publishes err to softnic_qp_error() readers, and the state
		 * to the engine's next pass, which flushes what is left. */
		__atomic_store_n(&qp->s->in_error, 1, __ATOMIC_RELEASE);
	}
	engine_unlock_mgmt(e);
	return 0;
}

softnic_qp *softnic_qp_find(softnic *nic, uint32_t qpn)
{
	softnic_qp *found = NULL;

	for (int e = 0; nic && e < nic->nengines && !found; e++) {
		engine *en = &nic->engines[e];

		engine_lock_mgmt(en);
		for (int i = 0; i < en->nqps && !found; i++)
			if (en->qps[i]->s->qpn == qpn)
				found = en->qps[i];
		engine_unlock_mgmt(en);
	}
	if (!found)
		errno = ENOENT;
	return found;
}

int softnic_qp_in_error(const softnic_qp *qp)
{
	return (int)__atomic_load_n(&qp->s->in_error, __ATOMIC_ACQUIRE);
}

const char *softnic_qp_error(const softnic_qp *qp)
{
	softnic_qp *q = (softnic_qp *)qp;
	const snx_error *e = &qp->s->err;
	int n;

	if (!softnic_qp_in_error(qp))
		return "";
	n = snprintf(q->error, sizeof(q->error), "qp 0x%x wqe %u (opcode 0x%02x): %s [%s]",
		     qp->s->qpn, e->wqe_index, e->opcode, softnic_vsynd_text(e->vendor_syndrome),
		     gic_syndrome_name(e->syndrome));
	if (e->has_doorbell && n > 0 && (size_t)n < sizeof(q->error))
		n += snprintf(q->error + n, sizeof(q->error) - (size_t)n,
			      ": doorbell index %u, doorbell record %u, executed %u", e->db_index,
			      e->dbrec, e->executed);
	if (e->av_bytes && n > 0 && (size_t)n < sizeof(q->error))
		snprintf(q->error + n, sizeof(q->error) - (size_t)n,
			 ": DCI address vector (%s, %u bytes) names DCT 0x%x", e->av_bytes == 48 ?
			 "full" : "compact", e->av_bytes, e->dct_num);
	return q->error;
}

int softnic_qp_view(softnic_qp *qp, gic_sq *sq, gic_cq *cq)
{
	if (!qp || !sq || !cq || !qp->send_cq) /* a DCT without one sends nothing */
		return EINVAL;
	softnic_cq_view(qp->send_cq, cq);
	memset(sq, 0, sizeof(*sq));
	sq->wqes = qp->s->sq_buf;
	sq->dbrec = qp->s->dbrec;
	sq->db = qp->s->db;
	sq->bb_cnt = qp->s->bb_cnt;
	sq->qpn = qp->s->qpn;
	sq->max_inline = GIC_WQE_MAX_DS * GIC_SEG_SIZE - 2 * GIC_SEG_SIZE - 4;
	sq->cq = cq;
	return 0;
}

int softnic_qp_desc_get(const softnic_qp *qp, softnic_qp_desc *out)
{
	const snx_rq *rq;

	if (!qp || !out)
		return EINVAL;
	rq = qp->srq ? NULL : qp->s->rq;
	memset(out, 0, sizeof(*out));
	out->dbrec = qp->dbrec_base;
	out->sq.buf = qp->s->sq_buf;
	out->sq.wqe_cnt = qp->s->bb_cnt;
	out->sq.stride = GIC_SEND_WQE_BB;
	out->rq.buf = rq ? rq->buf : NULL;
	out->rq.wqe_cnt = rq ? rq->wqe_cnt : 0;
	out->rq.stride = rq ? rq->stride : 0;
	out->bf.reg = qp->s->db;
	out->bf.size = SOFTNIC_BF_SIZE;
	out->qpn = qp->s->qpn;
	return 0;
}

int softnic_cq_desc_get(const softnic_cq *cq, softnic_cq_desc *out)
{
	if (!cq || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->buf = cq->s->cqes;
	out->dbrec = cq->s->dbrec;
	out->cqe_cnt = cq->s->cqe_cnt;
	out->cqe_size = GIC_CQE_SIZE;
	out->cqn = cq->s->cqn;
	out->mode = cq->s->mode;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Shared receive queues. */

/* An SRQ's stride: as rdma-core's, the next segment and the data
 * segments, at least 32 bytes, a power of two. */
static uint32_t srq_stride(const softnic_srq_attr *a)
{
	uint32_t stride = pow2_at_least(GIC_SEG_SIZE * (1 + (uint32_t)a->max_sge));

	return stride < 32 ? 32 : stride;
}

size_t softnic_srq_ring_bytes(const softnic_srq_attr *attr)
{
	if (!attr || attr->log_wqe_cnt < 1 || attr->log_wqe_cnt > 15 || attr->max_sge < 1 ||
	    attr->max_sge > SOFTNIC_MAX_SGE)
		return 0;
	return ((size_t)1 << attr->log_wqe_cnt) * srq_stride(attr);
}

/* 0, or EINVAL with the reason as the softnic's last error. */
static int srq_attr_check(softnic *nic, const softnic_srq_attr *attr)
{
	size_t ring = softnic_srq_ring_bytes(attr);

	if (!ring || (attr->flags & ~SOFTNIC_MEM_INIT)) {
		softnic_set_error(nic, "srq_create: log_wqe_cnt outside 1..15, max_sge outside "
				  "1..16, or unknown flags 0x%x", attr->flags);
		return EINVAL;
	}
	if (qmem_check(nic, "srq_create", "SRQ ring", &attr->ring_mem, ring, SOFTNIC_RING_ALIGN) ||
	    qmem_check(nic, "srq_create", "doorbell record", &attr->dbrec_mem, SOFTNIC_DBREC_BYTES,
		       SOFTNIC_DBREC_ALIGN))
		return EINVAL;
	return 0;
}

static void srq_free(softnic_srq *srq)
{
	softnic *nic = srq->pd->nic;

	if (srq->s)
		qmem_give_back(nic, srq->s->dbrec, srq->caller_mem, SOFTNIC_MEM_DBREC);
	rq_free(nic, srq->s, srq->caller_mem, SOFTNIC_MEM_RING);
	free(srq);
}

/* The SRQ's ring and record, the free list linked as a fresh SRQ's (WQE i
 * to i + 1) where softnic owns the ring or the attr asks it to. 0 or
 * ENOMEM. */
static int srq_queues(softnic_srq *srq, const softnic_srq_attr *attr)
{
	softnic *nic = srq->pd->nic;
	int init = !!(attr->flags & SOFTNIC_MEM_INIT);
	uint32_t cnt = 1u << attr->log_wqe_cnt;
	snx_rq *rq;

	srq->s = rq = rq_alloc(nic, cnt, srq_stride(attr), (uint32_t)attr->max_sge, srq->pd->id,
			       &attr->ring_mem, init, &srq->caller_mem, SOFTNIC_MEM_RING);
	if (!rq)
		return ENOMEM;
	rq->dbrec = qmem_take(nic, &attr->dbrec_mem, SOFTNIC_DBREC_BYTES, SOFTNIC_CACHELINE, init,
			      &srq->caller_mem, SOFTNIC_MEM_DBREC);
	if (!rq->dbrec)
		return ENOMEM;
	for (uint32_t i = 0; (init || !(srq->caller_mem & SOFTNIC_MEM_RING)) && i < cnt; i++) {
		gic_srq_next_seg *n = (gic_srq_next_seg *)(rq->buf + (size_t)i * rq->stride);

		n->next_wqe_index_be = gic_htobe16((uint16_t)((i + 1) & (cnt - 1)));
	}
	qmem_prepared(nic, rq->buf, (size_t)cnt * rq->stride, srq->caller_mem, SOFTNIC_MEM_RING);
	qmem_prepared(nic, rq->dbrec, SOFTNIC_CACHELINE, srq->caller_mem, SOFTNIC_MEM_DBREC);
	return 0;
}

softnic_srq *softnic_srq_create(softnic_pd *pd, const softnic_srq_attr *attr)
{
	softnic *nic;
	softnic_srq *srq;

	if (!pd || !attr || srq_attr_check(pd->nic, attr)) {
		if (pd && !attr)
			softnic_set_error(pd->nic, "srq_create: no attributes");
		errno = EINVAL;
		return NULL;
	}
	nic = pd->nic;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	srq->pd = pd;
	if (srq_queues(srq, attr)) {
		srq_free(srq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&nic->lock);
	srq->s->srqn = nic->next_srqn++;
	list_add(&nic->srqs, &srq->link);
	pd->users++;
	pthread_mutex_unlock(&nic->lock);
	return srq;
}

int softnic_srq_destroy(softnic_srq *srq)
{
	softnic *nic;

	if (!srq)
		return EINVAL;
	nic = srq->pd->nic;
	if (users_of(nic, &srq->users)) {
		softnic_set_error(nic, "srq_destroy: SRQ 0x%x still used by %d QPs", srq->s->srqn,
				  srq->users);
		return EBUSY;
	}
	unlink_obj(nic, &srq->link);
	pthread_mutex_lock(&nic->lock);
	srq->pd->users--;
	pthread_mutex_unlock(&nic->lock);
	srq_free(srq);
	return 0;
}

uint32_t softnic_srq_num(const softnic_srq *srq) { return srq->s->srqn; }

/* The object on list whose number number_of gives n, or NULL (under the
 * softnic's lock: the lists change under it). */
static obj_link *find_on(softnic *nic, obj_link *list, uint32_t n,
			 uint32_t (*number_of)(const obj_link *l))
{
	obj_link *hit = NULL;

	pthread_mutex_lock(&nic->lock);
	for (obj_link *l = list->next; l != list && !hit; l = l->next)
		if (number_of(l) == n)
			hit = l;
	pthread_mutex_unlock(&nic->lock);
	return hit;
}

static uint32_t pd_number(const obj_link *l) { return ((const softnic_pd *)l)->id; }
static uint32_t cq_number(const obj_link *l) { return ((const softnic_cq *)l)->s->cqn; }
static uint32_t srq_number(const obj_link *l) { return ((const softnic_srq *)l)->s->srqn; }

softnic_pd *softnic_pd_find(softnic *nic, uint32_t pdn)
{
	return nic ? (softnic_pd *)find_on(nic, &nic->pds, pdn, pd_number) : NULL;
}

softnic_cq *softnic_cq_find(softnic *nic, uint32_t cqn)
{
	return nic ? (softnic_cq *)find_on(nic, &nic->cqs, cqn, cq_number) : NULL;
}

softnic_srq *softnic_srq_find(softnic *nic, uint32_t srqn)
{
	return nic ? (softnic_srq *)find_on(nic, &nic->srqs, srqn, srq_number) : NULL;
}

int softnic_srq_desc_get(const softnic_srq *srq, softnic_srq_desc *out)
{
	if (!srq || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->buf = srq->s->buf;
	out->dbrec = srq->s->dbrec;
	out->stride = srq->s->stride;
	out->wqe_cnt = srq->s->wqe_cnt;
	out->srqn = srq->s->srqn;
	return 0;
}
