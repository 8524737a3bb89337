/*
 * The emulated device's verbs objects: protection domains and parent
 * domains, memory regions, CQs (plain and extended), SRQs, each a softnic
 * object (RC QPs are in verbs_qp.c).
 * Arguments are checked as rdma-core documents (EINVAL, or NULL with errno
 * set); nothing here crashes on bad input that a pointer check can see.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gic/softnic_devmem.h"

#include "emu.h"
#include "emu_private.h"
#include "host_probe.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

static void *fail_null(int e)
{
	errno = e;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* PDs and MRs. */

static softnic_pd *pd_s(struct ibv_pd *pd) { return ((emu_pd *)pd)->s; }

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	emu_pd *p;

	if (!ctx)
		return fail_null(EINVAL);
	p = calloc(1, sizeof(*p));
	if (!p)
		return fail_null(ENOMEM);
	p->s = softnic_pd_alloc(emu.nic);
	if (!p->s) {
		free(p);
		return fail_null(ENOMEM);
	}
	p->pd.context = ctx;
	p->pd.handle = softnic_pd_num(p->s); /* the PD number (mlx5dv's pdn) */
	return &p->pd;
}

/* ------------------------------------------------------------------ */
/* Parent domains: a PD's softnic PD with the caller's allocators (as
 * rdma-core, interchangeable with the PD for every object). */

typedef struct emu_parent {
	emu_pd base;                 /* first: base.s is the protection domain's */
	struct ibv_pd *protection;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t align,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
	int users;                   /* QPs and CQs made on it */
	struct emu_parent *next;
} emu_parent;

static pthread_mutex_t parents_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_parent *parents;

/* The parent domain behind pd, or NULL; the caller holds parents_lock. */
static emu_parent *parent_of(const struct ibv_pd *pd)
{
	for (emu_parent *p = parents; p; p = p->next)
		if (&p->base.pd == pd)
			return p;
	return NULL;
}

/* 1 when a parent domain is built on pd; the caller holds parents_lock. */
static int protects_a_parent(const struct ibv_pd *pd)
{
	for (emu_parent *p = parents; p; p = p->next)
		if (p->protection == pd)
			return 1;
	return 0;
}

/* EINVAL unless a is a parent domain rdma-core would make on ctx: a PD of
 * ctx (not itself a parent domain; the caller holds parents_lock), no
 * thread domain (none can exist: ibv_alloc_td is not implemented), known
 * comp_mask bits, and both allocator functions when they are given. */
static int parent_attr_check(struct ibv_context *ctx, const struct ibv_parent_domain_init_attr *a)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;

	if (!ctx || !a || !a->pd || a->pd->context != ctx || a->td || (a->comp_mask & ~known))
		return EINVAL;
	if ((a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) && (!a->alloc || !a->free))
		return EINVAL;
	return parent_of(a->pd) ? EINVAL : 0;
}

struct ibv_pd *emu_alloc_parent_domain(struct ibv_context *ctx,
				       struct ibv_parent_domain_init_attr *a)
{
	emu_parent *p;
	int rc;

	pthread_mutex_lock(&parents_lock);
	rc = parent_attr_check(ctx, a);
	p = rc ? NULL : calloc(1, sizeof(*p));
	if (p) {
		p->base.s = pd_s(a->pd);
		p->base.pd.context = ctx;
		p->base.pd.handle = a->pd->handle; /* mlx5dv's pdn is the PD's */
		p->protection = a->pd;
		if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
			p->alloc = a->alloc;
			p->free = a->free;
		}
		if (a->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
			p->pd_context = a->pd_context;
		p->next = parents;
		parents = p;
	}
	pthread_mutex_unlock(&parents_lock);
	if (!p)
		return fail_null(rc ? rc : ENOMEM);
	return &p->base.pd;
}

/* Unlinks and frees p; EBUSY while a QP or CQ uses it. The caller holds
 * parents_lock. */
static int parent_free(emu_parent *p)
{
	if (p->users)
		return EBUSY;
	for (emu_parent **pp = &parents; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
	return 0;
}

int emu_pd_is_parent(struct ibv_pd *pd)
{
	int yes;

	pthread_mutex_lock(&parents_lock);
	yes = parent_of(pd) != NULL;
	pthread_mutex_unlock(&parents_lock);
	return yes;
}

void emu_pd_hold(struct ibv_pd *pd)
{
	emu_parent *p;

	pthread_mutex_lock(&parents_lock);
	p = parent_of(pd);
	if (p)
		p->users++;
	pthread_mutex_unlock(&parents_lock);
}

void emu_pd_release(struct ibv_pd *pd)
{
	emu_parent *p;

	pthread_mutex_lock(&parents_lock);
	p = parent_of(pd);
	if (p && p->users > 0)
		p->users--;
	pthread_mutex_unlock(&parents_lock);
}

/* pd's allocators (zeroed when pd is no parent domain or has none). */
static emu_parent parent_allocators(struct ibv_pd *pd)
{
	emu_parent *p, copy = { 0 };

	pthread_mutex_lock(&parents_lock);
	p = parent_of(pd);
	if (p)
		copy = *p;
	pthread_mutex_unlock(&parents_lock);
	return copy;
}

/* 1 when every page of [p, p + len) is host memory this process can read
 * and write: the kernel copies each page's first byte (and the last byte)
 * into a pipe and back, which fails with EFAULT where it cannot. The
 * bytes keep their values. softnic's host code writes the queues (posts,
 * initialisation) and the CPU engine reads and writes them. */
static int host_rw(const uint8_t *p, size_t len)
{
	size_t pages = (len + 4095) / 4096;
	int fds[2], ok = 1;

	if (pipe(fds))
		return 1; /* cannot tell: let it through */
	for (size_t i = 0; ok && i <= pages; i++) {
		const uint8_t *b = i < pages ? p + i * 4096 : p + len - 1;

		ok = write(fds[1], b, 1) == 1 && read(fds[0], (void *)b, 1) == 1;
	}
	close(fds[0]);
	close(fds[1]);
	return ok;
}

/* 0 when softnic can keep a queue buffer in [buf, buf + size); EFAULT or
 * EINVAL with one stderr line otherwise. */
static int queue_mem_check(const void *buf, size_t size, size_t align, const char *what)
{
	if ((uintptr_t)buf & (align - 1)) {
		fprintf(stderr, "gic-emu: a parent domain's allocator handed a %s buffer at %p, not "
			"aligned to the %zu bytes softnic needs (EINVAL)\n", what, buf, align);
		return EINVAL;
	}
	if (!host_rw(buf, size)) {
		fprintf(stderr, "gic-emu: a parent domain's allocator handed a %s buffer [%p, +%zu) "
			"that is not host memory this process can read and write (verbs post into "
			"queues from the host) (EFAULT)\n", what, buf, size);
		return EFAULT;
	}
	if (emu.gpu_engine && !emu_gpu_reaches(buf, size)) {
		fprintf(stderr, "gic-emu: a parent domain's allocator handed a %s buffer [%p, +%zu) "
			"that softnic's GPU engine cannot reach at its address: use managed memory or "
			"host memory registered with CUDA (GIC_EMU_ENGINE=gpu) (EFAULT)\n", what, buf,
			size);
		return EFAULT;
	}
	return 0;
}

/* One buffer from a's allocator: *out the memory, NULL for softnic's own.
 * 0, ENOMEM (the allocator gave NULL), EFAULT or EINVAL (unusable memory,
 * given back). */
static int queue_mem_get(const emu_parent *a, struct ibv_pd *pd, uint64_t res_type, size_t size,
			 size_t align, size_t need_align, const char *what, void **out)
{
	void *buf;
	int rc;

	*out = NULL;
	if (!a->alloc)
		return 0;
	/* Outside parents_lock: the allocator may call verbs itself. */
	buf = a->alloc(pd, a->pd_context, size, align, res_type);
	if (buf == IBV_ALLOCATOR_USE_DEFAULT)
		return 0;
	if (!buf)
		return ENOMEM;
	rc = queue_mem_check(buf, size, need_align, what);
	if (rc) {
		a->free(pd, a->pd_context, buf, res_type);
		return rc;
	}
	*out = buf;
	return 0;
}

int emu_umem_get(emu_umem *u, struct ibv_pd *pd, uint64_t res_type, size_t size, size_t align,
		 const char *what)
{
	emu_parent a = parent_allocators(pd);
	int rc;

	memset(u, 0, sizeof(*u));
	u->pd = pd;
	u->res_type = res_type;
	rc = queue_mem_get(&a, pd, res_type, size, align, SOFTNIC_RING_ALIGN, what, &u->buf);
	/* rdma-core's mlx5_alloc_dbrec: 8 bytes, aligned to 8. */
	if (!rc)
		rc = queue_mem_get(&a, pd, MLX5DV_RES_TYPE_DBR, 8, 8, SOFTNIC_DBREC_ALIGN,
				   "doorbell record", &u->dbrec);
	if (rc)
		emu_umem_put(u);
	return rc;
}

void emu_umem_put(emu_umem *u)
{
	emu_parent a = parent_allocators(u->pd);

	if (a.free && u->dbrec)
		a.free(u->pd, a.pd_context, u->dbrec, MLX5DV_RES_TYPE_DBR);
	if (a.free && u->buf)
		a.free(u->pd, a.pd_context, u->buf, u->res_type);
	u->buf = u->dbrec = NULL;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	emu_parent *p;
	int rc;

	if (!pd)
		return EINVAL;
	pthread_mutex_lock(&parents_lock);
	p = parent_of(pd);
	rc = p ? parent_free(p) : protects_a_parent(pd) ? EBUSY : softnic_pd_free(pd_s(pd));
	pthread_mutex_unlock(&parents_lock);
	if (!rc && !p)
		free(pd);
	return rc;
}

typedef struct emu_mr {
	struct ibv_mr mr; /* first */
	softnic_mr *s;
} emu_mr;

/* IBV_ACCESS_* bits softnic checks, and those it accepts and ignores. */
#define EMU_ACCESS_CHECKED (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define EMU_ACCESS_IGNORED (IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE | \
			    IBV_ACCESS_MW_BIND) /* no memory window can exist */

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				unsigned int access)
{
	emu_mr *m;
	int device = 0;

	if (!pd || !addr || !len || (access & ~(EMU_ACCESS_CHECKED | EMU_ACCESS_IGNORED)))
		return fail_null(EINVAL);
	/* Remote write and atomic rights need local write (as the verbs spec). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return fail_null(EINVAL);
	if (iova != (uint64_t)(uintptr_t)addr) {
		emu_missing("ibv_reg_mr_iova2", "an iova other than the address (softnic keys "
			    "resolve addresses)");
		return fail_null(EOPNOTSUPP);
	}
	if (emu.gpu_engine) {
		if (emu_gpu_region_check(addr, len))
			return fail_null(EFAULT);
	} else if (!emu_host_readable(addr, len)) {
		int rc = emu_gpu_devmem_prepare(addr, len);

		if (rc == EFAULT)
			fprintf(stderr, "gic-emu: ibv_reg_mr(%p, %zu): neither host memory this "
				"process can read nor device memory of a CUDA GPU\n", addr, len);
		if (rc)
			return fail_null(rc);
		device = 1; /* the CPU engine moves its bytes through CUDA */
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return fail_null(ENOMEM);
	m->s = (device ? softnic_reg_device_mr : softnic_reg_mr)(pd_s(pd), addr, len,
							       (int)(access & EMU_ACCESS_CHECKED));
	if (!m->s) {
		int e = errno;

		free(m);
		return fail_null(e ? e : EINVAL);
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.lkey = softnic_mr_lkey(m->s);
	m->mr.rkey = softnic_mr_rkey(m->s);
	m->mr.handle = m->mr.lkey;
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, (uint64_t)(uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, iova, (unsigned int)access);
}

/* A DMA-BUF region: softnic keys resolve addresses, so the iova must be
 * where this process sees the buffer (a mapping of fd at offset, or GPU
 * memory's unified address, as NVSHMEM and NCCL pass it). */
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				 int fd, int access)
{
	struct stat st;

	(void)offset;
	if (!pd || fd < 0 || fstat(fd, &st))
		return fail_null(EINVAL);
	return ibv_reg_mr_iova2(pd, (void *)(uintptr_t)iova, len, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	int rc;

	if (!mr)
		return EINVAL;
	rc = softnic_dereg_mr(((emu_mr *)mr)->s);
	if (!rc)
		free(mr);
	return rc;
}

/* ------------------------------------------------------------------ */
/* CQs and completion channels. */

/* log2 of the CQEs of a CQ of at least cqe entries. */
static int cq_log(uint32_t cqe)
{
	int l = log2_ceil(cqe + 1);

	return l < 1 ? 1 : l;
}

/* A CQ of at least cqe entries (1..65535; the next power of two) in the
 * softnic mode (SOFTNIC_CQ_*), on channel when not NULL, its ring and
 * record in um's memory where um (may be NULL) has it (softnic initialises
 * them, as rdma-core's provider writes a new CQ's op_own bytes). Every CQ
 * is an emu_cq_ext, so that plain and extended ones destroy alike. NULL
 * with errno. */
static emu_cq_ext *cq_make(struct ibv_context *ctx, uint32_t cqe, void *cq_context,
			   struct ibv_comp_channel *channel, uint32_t mode, const emu_umem *um)
{
	softnic_cq_attr sa = { .log_cqe_cnt = cq_log(cqe), .mode = mode,
			       .flags = SOFTNIC_MEM_INIT };
	emu_cq_ext *x = calloc(1, sizeof(*x));
	emu_cq *c = &x->c;

	if (!x)
		return fail_null(ENOMEM);
	if (um) {
		sa.ring_mem = (softnic_qmem){ um->buf, softnic_cq_ring_bytes(&sa) };
		sa.dbrec_mem = (softnic_qmem){ um->dbrec, 8 };
	}
	c->s = softnic_cq_create_ex(emu.nic, &sa);
	if (!c->s) {
		int e = errno ? errno : ENOMEM;

		fprintf(stderr, "gic-emu: CQ of %u entries: %s\n", cqe, softnic_last_error(emu.nic));
		free(x);
		return fail_null(e);
	}
	softnic_cq_view(c->s, &c->view);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&x->ex_lock, NULL);
	c->cq.context = ctx;
	c->cq.cq_context = cq_context;
	c->cq.cqe = (int)c->view.cqe_cnt - 1;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	if (channel) {
		int rc = emu_events_add(c);

		if (rc) {
			softnic_cq_destroy(c->s);
			free(x);
			return fail_null(rc);
		}
		c->cq.channel = channel;
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
	}
	return x;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	emu_cq_ext *x;

	if (!ctx || cqe < 1 || cqe > (1 << 16) - 1 || comp_vector < 0 ||
	    comp_vector >= ctx->num_comp_vectors)
		return fail_null(EINVAL);
	x = cq_make(ctx, (uint32_t)cqe, cq_context, channel, 0, NULL);
	return x ? &x->c.cq : NULL;
}

/* Completion fields an extended CQ can report (all of ibv_wc's), and
 * those it refuses by name. */
#define EMU_CQ_WC_FLAGS IBV_WC_STANDARD_FLAGS

/* EINVAL or EOPNOTSUPP (naming the attribute) for what an extended CQ
 * cannot be; 0 when a fits (rdma-core's mlx5 checks, softnic's limits). */
static int cq_ex_check(struct ibv_context *ctx, const struct ibv_cq_init_attr_ex *a)
{
	const uint32_t masks = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
	const uint32_t flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;

	if (!ctx || !a || a->cqe < 1 || a->cqe > (1u << 16) - 1 ||
	    a->comp_vector >= (uint32_t)ctx->num_comp_vectors || (a->comp_mask & ~masks))
		return EINVAL;
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (a->flags & ~flags))
		return EINVAL;
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!a->parent_domain || a->parent_domain->context != ctx ||
	     !emu_pd_is_parent(a->parent_domain)))
		return EINVAL;
	if (a->wc_flags & ~(uint64_t)EMU_CQ_WC_FLAGS) {
		fprintf(stderr, "gic-emu: ibv_create_cq_ex: refused (EOPNOTSUPP), softnic cannot "
			"report wc_flags 0x%llx (completion time stamps, CVLAN, flow tag, tag "
			"matching)\n",
			(unsigned long long)(a->wc_flags & ~(uint64_t)EMU_CQ_WC_FLAGS));
		return EOPNOTSUPP;
	}
	return 0;
}

struct ibv_cq_ex *emu_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
	struct ibv_pd *parent;
	emu_umem um;
	uint32_t mode = 0;
	emu_cq_ext *x;
	int rc = cq_ex_check(ctx, a);

	if (rc)
		return fail_null(rc);
	parent = a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD ? a->parent_domain : NULL;
	/* rdma-core's mlx5_alloc_cq_buf: the ring rounded up to a page,
	 * page-aligned; then the record (emu_umem_get). */
	if (parent && (rc = emu_umem_get(&um, parent, MLX5DV_RES_TYPE_CQ,
					 (((size_t)64 << cq_log(a->cqe)) + 4095) & ~(size_t)4095,
					 4096, "CQ")))
		return fail_null(rc);
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
		mode = SOFTNIC_CQ_OVERRUN_IGNORE;
	x = cq_make(ctx, a->cqe, a->cq_context, a->channel, mode, parent ? &um : NULL);
	if (!x) {
		rc = errno;
		if (parent)
			emu_umem_put(&um);
		return fail_null(rc);
	}
	emu_cq_ex_setup(x);
	if (parent) {
		emu_pd_hold(parent);
		x->parent = parent;
		x->umem = um;
	}
	return &x->c.cqx;
}

/* mlx5dv_create_cq's way in (node GIC_EMU_PRIVATE_1, emu_private.h). */
struct ibv_cq_ex *gic_emu_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a)
{
	if (!ctx || !gic_emu_is_device(ctx->device))
		return fail_null(EINVAL);
	return emu_create_cq_ex(ctx, a);
}

void emu_objects_set_ops(struct verbs_context *v)
{
	if (!v)
		return;
	__atomic_store_n(&v->create_cq_ex, emu_create_cq_ex, __ATOMIC_RELAXED);
	__atomic_store_n(&v->alloc_parent_domain, emu_alloc_parent_domain, __ATOMIC_RELAXED);
}

/* Waits (10 s at most) until every event raised on cq was acknowledged,
 * as ibv_destroy_cq must; EBUSY when the application never acknowledges. */
static int wait_acks(emu_cq *c)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&c->cq.mutex);
	while (c->cq.comp_events_completed != c->events_raised && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&c->cq.cond, &c->cq.mutex, &until);
	pthread_mutex_unlock(&c->cq.mutex);
	if (rc == ETIMEDOUT) {
		fprintf(stderr, "gic-emu: ibv_destroy_cq: %u completion events never acknowledged "
			"(ibv_ack_cq_events)\n", c->events_raised - c->cq.comp_events_completed);
		return EBUSY;
	}
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	emu_cq *c = (emu_cq *)cq;
	int rc;

	if (!cq)
		return EINVAL;
	if (cq->channel) {
		emu_events_remove(c); /* no event is raised from here on */
		rc = wait_acks(c);
		if (rc)
			return rc;
	}
	rc = softnic_cq_destroy(c->s);
	if (rc)
		return rc;
	if (cq->channel)
		__atomic_fetch_sub(&cq->channel->refcnt, 1, __ATOMIC_RELAXED);
	if (((emu_cq_ext *)c)->parent) {
		emu_umem_put(&((emu_cq_ext *)c)->umem); /* the parent is still held */
		emu_pd_release(((emu_cq_ext *)c)->parent);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&((emu_cq_ext *)c)->ex_lock);
	free(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* SRQs. */

/* The softnic SRQ of q for attr on pd, its ring and record from pd's
 * allocator when it is a parent domain with one (rdma-core's
 * mlx5_alloc_srq_buf: max WQEs of the stride, page-aligned; softnic links
 * the free list, as rdma-core's set_srq_buf_ll). 0 or an errno. */
static int srq_make(emu_srq *q, struct ibv_pd *pd, const struct ibv_srq_init_attr *attr,
		    softnic_srq_attr *sa)
{
	int rc;

	/* One WQE always stays free as the list's end: max_wr + 1 slots. */
	sa->log_wqe_cnt = log2_ceil(attr->attr.max_wr + 1);
	sa->max_sge = attr->attr.max_sge ? (int)attr->attr.max_sge : 1;
	sa->flags = SOFTNIC_MEM_INIT;
	rc = emu_umem_get(&q->umem, pd, MLX5DV_RES_TYPE_SRQ, softnic_srq_ring_bytes(sa), 4096,
			  "SRQ");
	if (rc)
		return rc;
	sa->ring_mem = (softnic_qmem){ q->umem.buf, softnic_srq_ring_bytes(sa) };
	sa->dbrec_mem = (softnic_qmem){ q->umem.dbrec, 8 };
	q->s = softnic_srq_create(pd_s(pd), sa);
	if (!q->s) {
		rc = errno ? errno : ENOMEM;
		fprintf(stderr, "gic-emu: ibv_create_srq: %s\n", softnic_last_error(emu.nic));
		emu_umem_put(&q->umem);
	}
	return rc;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	emu_srq *q;
	softnic_srq_desc d;
	softnic_srq_attr sa = { 0 };
	int rc;

	if (!pd || !attr || attr->attr.max_wr < 1 || attr->attr.max_wr > (1u << 15) - 1 ||
	    attr->attr.max_sge > EMU_MAX_SGE)
		return fail_null(EINVAL);
	q = calloc(1, sizeof(*q));
	if (!q)
		return fail_null(ENOMEM);
	rc = srq_make(q, pd, attr, &sa);
	if (!rc) {
		softnic_srq_desc_get(q->s, &d);
		q->wrid = calloc(d.wqe_cnt, sizeof(uint64_t));
		if (!q->wrid) {
			softnic_srq_destroy(q->s);
			emu_umem_put(&q->umem);
			rc = ENOMEM;
		}
	}
	if (rc) {
		free(q);
		return fail_null(rc);
	}
	gic_rq_init(&q->view, d.buf, d.dbrec, d.wqe_cnt, d.stride, (uint32_t)sa.max_sge, 1);
	q->max_sge = (uint32_t)sa.max_sge;
	pthread_mutex_init(&q->lock, NULL);
	attr->attr.max_wr = d.wqe_cnt - 1;
	attr->attr.max_sge = q->max_sge;
	q->srq.context = pd->context;
	q->srq.srq_context = attr->srq_context;
	q->srq.pd = pd;
	q->srq.handle = d.srqn;
	pthread_mutex_init(&q->srq.mutex, NULL);
	pthread_cond_init(&q->srq.cond, NULL);
	/* A parent domain whose allocator handed the queues stays until they
	 * are given back (rdma-core counts only QPs and CQs as its users). */
	if (q->umem.buf || q->umem.dbrec)
		emu_pd_hold(pd);
	return &q->srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	emu_srq *q = (emu_srq *)srq;
	int rc;

	if (!srq)
		return EINVAL;
	rc = softnic_srq_destroy(q->s);
	if (rc)
		return rc;
	if (q->umem.buf || q->umem.dbrec) {
		emu_umem_put(&q->umem);
		emu_pd_release(srq->pd);
	}
	free(q->wrid);
	free(q);
	return 0;
}

int emu_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	if (!srq || !num)
		return EINVAL;
	*num = softnic_srq_num(((emu_srq *)srq)->s);
	return 0;
}
