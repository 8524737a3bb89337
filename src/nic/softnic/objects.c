/*
 * softnic objects: the device, protection domains, memory regions, CQs and
 * QPs, and the queue memory behind them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softnic_internal.h"

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

static void link_obj(softnic *nic, obj_link *head, obj_link *o)
{
	pthread_mutex_lock(&nic->lock);
	list_add(head, o);
	pthread_mutex_unlock(&nic->lock);
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

/* Queue memory through the user's allocator, or zeroed host memory. */
static void *queue_alloc(softnic *nic, size_t size, size_t align)
{
	const softnic_allocator *a = nic->attr.queue_mem;

	return a ? a->alloc(size, align, a->ctx) : zalloc_aligned(align, size);
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

softnic *softnic_open(const softnic_attr *attr)
{
	softnic_attr def = { .engine_threads = 1 };
	softnic *nic;

	if (!attr)
		attr = &def;
	if (attr->engine_threads < 0 || attr->engine_threads > 64) {
		errno = EINVAL;
		return NULL;
	}
	nic = zalloc_aligned(SOFTNIC_CACHELINE, sizeof(*nic));
	if (!nic)
		return NULL;
	nic->attr = *attr;
	nic->next_qpn = 0x100;
	nic->next_cqn = 0x80;
	nic->nengines = attr->engine_threads ? attr->engine_threads : 1;
	pthread_mutex_init(&nic->lock, NULL);
	list_init(&nic->pds);
	list_init(&nic->mrs_list);
	list_init(&nic->cqs);
	nic->engines = zalloc_aligned(SOFTNIC_CACHELINE, sizeof(engine) * nic->nengines);
	if (!nic->engines) {
		free(nic);
		return NULL;
	}
	for (int i = 0; i < nic->nengines; i++) {
		nic->engines[i].nic = nic;
		nic->engines[i].index = i;
		pthread_mutex_init(&nic->engines[i].lock, NULL);
	}
	if (attr->engine_threads && softnic_engines_start(nic)) {
		int saved = errno;

		free(nic->engines);
		free(nic);
		errno = saved;
		return NULL;
	}
	return nic;
}

void softnic_close(softnic *nic)
{
	if (!nic)
		return;
	softnic_engines_stop(nic);
	for (int e = 0; e < nic->nengines; e++) {
		while (nic->engines[e].nqps)
			softnic_qp_destroy(nic->engines[e].qps[0]);
		pthread_mutex_destroy(&nic->engines[e].lock);
	}
	while (nic->mrs_list.next != &nic->mrs_list)
		softnic_dereg_mr((softnic_mr *)nic->mrs_list.next);
	while (nic->cqs.next != &nic->cqs)
		softnic_cq_destroy((softnic_cq *)nic->cqs.next);
	while (nic->pds.next != &nic->pds)
		softnic_pd_free((softnic_pd *)nic->pds.next);
	pthread_mutex_destroy(&nic->lock);
	free(nic->engines);
	free(nic);
}

void softnic_get_stats(const softnic *nic, softnic_stats *out)
{
	out->wqes_executed = __atomic_load_n(&nic->stats.wqes_executed, __ATOMIC_RELAXED);
	out->cqes_written = __atomic_load_n(&nic->stats.cqes_written, __ATOMIC_RELAXED);
	out->error_cqes = __atomic_load_n(&nic->stats.error_cqes, __ATOMIC_RELAXED);
	out->strict_violations = __atomic_load_n(&nic->stats.strict_violations, __ATOMIC_RELAXED);
	out->cq_full_stalls = __atomic_load_n(&nic->stats.cq_full_stalls, __ATOMIC_RELAXED);
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
	link_obj(nic, &nic->pds, &pd->link);
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
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	pthread_mutex_lock(&nic->lock);
	for (uint32_t s = 1; s < SOFTNIC_MAX_MR; s++) {
		mr_slot *slot = &nic->mrs[s];

		if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED))
			continue;
		slot->generation = (uint8_t)(slot->generation + 1);
		__atomic_store_n(&slot->access, (uint32_t)access, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->addr, (uint64_t)(uintptr_t)addr, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->len, (uint64_t)len, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->pd, pd, __ATOMIC_RELAXED);
		mr->nic = nic;
		mr->slot = s;
		mr->key = (s << 8) | slot->generation;
		/* Publishes the fields above to lock-free lookups. */
		__atomic_store_n(&slot->key, mr->key, __ATOMIC_RELEASE);
		pd->users++;
		list_add(&nic->mrs_list, &mr->link);
		pthread_mutex_unlock(&nic->lock);
		return mr;
	}
	pthread_mutex_unlock(&nic->lock);
	free(mr);
	softnic_set_error(nic, "reg_mr: all %d memory-region slots in use", SOFTNIC_MAX_MR - 1);
	errno = ENOSPC;
	return NULL;
}

int softnic_dereg_mr(softnic_mr *mr)
{
	softnic *nic;
	mr_slot *slot;

	if (!mr)
		return EINVAL;
	nic = mr->nic;
	slot = &nic->mrs[mr->slot];
	pthread_mutex_lock(&nic->lock);
	__atomic_load_n(&slot->pd, __ATOMIC_RELAXED)->users--;
	__atomic_store_n(&slot->key, 0, __ATOMIC_RELEASE);
	list_del(&mr->link);
	pthread_mutex_unlock(&nic->lock);
	free(mr);
	return 0;
}

uint32_t softnic_mr_lkey(const softnic_mr *mr) { return mr->key; }
uint32_t softnic_mr_rkey(const softnic_mr *mr) { return mr->key; }

int softnic_mr_resolve(softnic *nic, softnic_pd *pd, uint32_t key, uint64_t addr,
		       uint64_t len, uint32_t need, uint8_t **ptr)
{
	uint32_t s = key >> 8;
	const mr_slot *slot;
	uint64_t base, size;
	uint32_t access;
	softnic_pd *owner;

	if (s == 0 || s >= SOFTNIC_MAX_MR)
		return SOFTNIC_VSYND_BAD_LKEY;
	slot = &nic->mrs[s];
	if (__atomic_load_n(&slot->key, __ATOMIC_ACQUIRE) != key)
		return SOFTNIC_VSYND_BAD_LKEY;
	base = __atomic_load_n(&slot->addr, __ATOMIC_RELAXED);
	size = __atomic_load_n(&slot->len, __ATOMIC_RELAXED);
	access = __atomic_load_n(&slot->access, __ATOMIC_RELAXED);
	owner = __atomic_load_n(&slot->pd, __ATOMIC_RELAXED);
	/* Orders the field reads above before the key re-check below. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&slot->key, __ATOMIC_RELAXED) != key || owner != pd)
		return SOFTNIC_VSYND_BAD_LKEY;
	if (addr < base || len > size || addr - base > size - len)
		return SOFTNIC_VSYND_LOCAL_BOUNDS;
	if ((access & need) != need)
		return SOFTNIC_VSYND_LOCAL_ACCESS;
	*ptr = (uint8_t *)(uintptr_t)addr;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Completion queues. */

softnic_cq *softnic_cq_create(softnic *nic, int log_cqe_cnt)
{
	softnic_cq *cq;

	if (!nic || log_cqe_cnt < 1 || log_cqe_cnt > 16) {
		if (nic)
			softnic_set_error(nic, "cq_create: log_cqe_cnt %d outside 1..16", log_cqe_cnt);
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	cq->nic = nic;
	cq->cqe_cnt = 1u << log_cqe_cnt;
	cq->cqes = queue_alloc(nic, (size_t)cq->cqe_cnt * sizeof(gic_cqe64), 4096);
	cq->dbrec = queue_alloc(nic, SOFTNIC_CACHELINE, SOFTNIC_CACHELINE);
	if (!cq->cqes || !cq->dbrec) {
		queue_free(nic, cq->cqes);
		queue_free(nic, cq->dbrec);
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	/* Hardware-owned and invalid until the first pass writes them. */
	for (uint32_t i = 0; i < cq->cqe_cnt; i++)
		cq->cqes[i].op_own = GIC_CQE_INVALID << 4;
	pthread_mutex_lock(&nic->lock);
	cq->cqn = nic->next_cqn++;
	list_add(&nic->cqs, &cq->link);
	pthread_mutex_unlock(&nic->lock);
	return cq;
}

int softnic_cq_destroy(softnic_cq *cq)
{
	if (!cq)
		return EINVAL;
	if (cq->users) {
		softnic_set_error(cq->nic, "cq_destroy: CQ 0x%x still used by %d QPs", cq->cqn,
				  cq->users);
		return EBUSY;
	}
	unlink_obj(cq->nic, &cq->link);
	queue_free(cq->nic, cq->cqes);
	queue_free(cq->nic, cq->dbrec);
	free(cq);
	return 0;
}

int softnic_cq_view(softnic_cq *cq, gic_cq *view)
{
	if (!cq || !view)
		return EINVAL;
	memset(view, 0, sizeof(*view));
	view->cqes = cq->cqes;
	view->dbrec = cq->dbrec;
	view->cqe_cnt = cq->cqe_cnt;
	view->cqn = cq->cqn;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queue pairs. */

static void qp_free_memory(softnic_qp *qp)
{
	queue_free(qp->nic, qp->sq_buf);
	queue_free(qp->nic, qp->dbrec);
	queue_free(qp->nic, qp->db);
	free(qp);
}

softnic_qp *softnic_qp_create(softnic_pd *pd, const softnic_qp_attr *attr)
{
	softnic *nic;
	softnic_qp *qp;
	engine *e;

	if (!pd || !attr || !attr->send_cq || attr->log_sq_bb < 1 || attr->log_sq_bb > 15) {
		if (pd)
			softnic_set_error(pd->nic, "qp_create: need a send CQ and log_sq_bb in 1..15");
		errno = EINVAL;
		return NULL;
	}
	nic = pd->nic;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	qp->nic = nic;
	qp->pd = pd;
	qp->bb_cnt = 1u << attr->log_sq_bb;
	qp->sq_buf = queue_alloc(nic, (size_t)qp->bb_cnt * GIC_SEND_WQE_BB, 4096);
	qp->dbrec = queue_alloc(nic, SOFTNIC_CACHELINE, SOFTNIC_CACHELINE);
	qp->db = queue_alloc(nic, SOFTNIC_CACHELINE, SOFTNIC_CACHELINE);
	if (!qp->sq_buf || !qp->dbrec || !qp->db) {
		qp_free_memory(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	pthread_mutex_lock(&nic->lock);
	qp->qpn = nic->next_qpn++;
	qp->engine = nic->next_engine;
	nic->next_engine = (nic->next_engine + 1) % nic->nengines;
	pthread_mutex_unlock(&nic->lock);
	/* The doorbell word starts as the value no doorbell can carry for
	 * this QP at position 0, so the engine sees only real doorbells. */
	qp->last_db = 0;
	e = &nic->engines[qp->engine];
	engine_lock_mgmt(e);
	if (e->nqps == SOFTNIC_MAX_QP_PER_ENGINE) {
		engine_unlock_mgmt(e);
		softnic_set_error(nic, "qp_create: engine %d already runs %d QPs", qp->engine,
				  SOFTNIC_MAX_QP_PER_ENGINE);
		qp_free_memory(qp);
		errno = ENOSPC;
		return NULL;
	}
	e->qps[e->nqps++] = qp;
	engine_unlock_mgmt(e);
	pd->users++;
	qp->send_cq->users++;
	if (qp->recv_cq)
		qp->recv_cq->users++;
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
	engine_lock_mgmt(e);
	engine_remove_qp(e, qp);
	engine_unlock_mgmt(e);
	if (qp->peer) {
		softnic_qp *peer = qp->peer;
		engine *pe = &nic->engines[peer->engine];

		/* The peer's engine reads peer->peer only under its lock. */
		engine_lock_mgmt(pe);
		peer->peer = NULL;
		peer->peer_gone = 1;
		engine_unlock_mgmt(pe);
	}
	qp->pd->users--;
	qp->send_cq->users--;
	if (qp->recv_cq)
		qp->recv_cq->users--;
	qp_free_memory(qp);
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
	if (!a || !b || a == b || a->nic != b->nic)
		return EINVAL;
	if (a->connected || b->connected) {
		softnic_set_error(a->nic, "qp_connect: QP 0x%x or 0x%x is already connected",
				  a->qpn, b->qpn);
		return EISCONN;
	}
	lock_pair(a->nic, a->engine, b->engine);
	a->peer = b;
	b->peer = a;
	a->connected = b->connected = 1;
	unlock_pair(a->nic, a->engine, b->engine);
	return 0;
}

uint32_t softnic_qp_num(const softnic_qp *qp) { return qp->qpn; }

int softnic_qp_in_error(const softnic_qp *qp)
{
	return __atomic_load_n(&qp->in_error, __ATOMIC_ACQUIRE);
}

const char *softnic_qp_error(const softnic_qp *qp)
{
	return softnic_qp_in_error(qp) ? qp->error : "";
}

int softnic_qp_view(softnic_qp *qp, gic_sq *sq, gic_cq *cq)
{
	if (!qp || !sq || !cq)
		return EINVAL;
	softnic_cq_view(qp->send_cq, cq);
	memset(sq, 0, sizeof(*sq));
	sq->wqes = qp->sq_buf;
	sq->dbrec = qp->dbrec;
	sq->db = qp->db;
	sq->bb_cnt = qp->bb_cnt;
	sq->qpn = qp->qpn;
	sq->max_inline = GIC_WQE_MAX_DS * GIC_SEG_SIZE - 2 * GIC_SEG_SIZE - 4;
	sq->cq = cq;
	return 0;
}
