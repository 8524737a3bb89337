/*
 * GPU memory behind the CPU engine (gic/softnic_devmem.h, devmem.h): which
 * softnic has which CUDA part, GPU-memory MRs, and the engine's moves and
 * atomics for WQEs whose regions are GPU memory. CUDA-free: the part does
 * the CUDA calls. For a multi-process softnic, a peer's GPU address is
 * first translated into a buffer opened here (shm.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gic/softnic_devmem.h"
#include "softnic_internal.h"
#include "engine_core.h"
#include "devmem.h"

enum {
	DEVMEM_PARTS = 64, /* softnics of one process with a part attached */
	DEVMEM_MSGS = 8,   /* failures said on stderr, per softnic */
};

typedef struct devmem_part {
	const snx_shared *sh; /* the engine's key to it; NULL: a free entry */
	softnic *nic;
	const devmem_ops *ops;
	void *ctx;
	int msgs;
} devmem_part;

static pthread_mutex_t parts_lock = PTHREAD_MUTEX_INITIALIZER;
static devmem_part parts[DEVMEM_PARTS];

/* The entry of the softnic whose engine state is sh, or NULL; the caller
 * holds parts_lock. */
static devmem_part *part_of(const snx_shared *sh)
{
	for (int i = 0; i < DEVMEM_PARTS; i++)
		if (parts[i].sh && parts[i].sh == sh)
			return &parts[i];
	return NULL;
}

int softnic_devmem_attach(softnic *nic, const devmem_ops *ops, void *ctx)
{
	devmem_part *free_entry = NULL;
	int rc = 0;

	if (!nic || !ops || nic->backend.state_alloc)
		return EINVAL; /* the GPU engine reaches GPU memory itself */
	pthread_mutex_lock(&parts_lock);
	if (part_of(nic->shared)) {
		rc = EINVAL;
	} else {
		for (int i = 0; i < DEVMEM_PARTS && !free_entry; i++)
			if (!parts[i].sh)
				free_entry = &parts[i];
		if (free_entry)
			*free_entry = (devmem_part){ nic->shared, nic, ops, ctx, 0 };
		else
			rc = ENOSPC;
	}
	pthread_mutex_unlock(&parts_lock);
	return rc;
}

int softnic_devmem_enabled(const softnic *nic)
{
	int on;

	pthread_mutex_lock(&parts_lock);
	on = nic && part_of(nic->shared) != NULL;
	pthread_mutex_unlock(&parts_lock);
	return on;
}

void softnic_devmem_release(softnic *nic)
{
	devmem_part p = { 0 };
	devmem_part *e;

	pthread_mutex_lock(&parts_lock);
	e = part_of(nic->shared);
	if (e) {
		p = *e;
		memset(e, 0, sizeof(*e));
	}
	pthread_mutex_unlock(&parts_lock);
	if (p.ops && p.ops->release)
		p.ops->release(p.ctx);
}

void softnic_mr_to_device(softnic_mr *mr, int access)
{
	snx_mr *slot = &mr->nic->shared->mrs[mr->slot];

	/* One store: a lookup sees no rights, or the rights with the flag. */
	__atomic_store_n(&slot->access, (uint32_t)access | SNX_MR_DEVICE, __ATOMIC_RELEASE);
}

softnic_mr *softnic_reg_device_mr(softnic_pd *pd, void *addr, size_t len, int access)
{
	softnic *nic = pd ? pd->nic : NULL;
	softnic_mr *mr;

	if (!nic || !addr || !len || (access & ~0xf) || nic->shm || !softnic_devmem_enabled(nic)) {
		if (nic)
			softnic_set_error(nic, "reg_device_mr: %s (addr %p, len %zu, access 0x%x)",
					  nic->shm ? "a multi-process softnic registers GPU memory "
					  "with softnic_shared_reg_gpu_mr" :
					  !softnic_devmem_enabled(nic) ? "no CUDA part is attached "
					  "(softnic_cuda_devmem_enable)" : "bad argument",
					  addr, len, access);
		errno = EINVAL;
		return NULL;
	}
	/* No rights until the slot is marked GPU memory. */
	mr = softnic_reg_mr(pd, addr, len, 0);
	if (mr)
		softnic_mr_to_device(mr, access);
	return mr;
}

/* The part serving sh's engine, copied out under the lock (a part is
 * released only after its engines stopped), or 0 fields. */
static devmem_part part_get(const snx_shared *sh)
{
	devmem_part p = { 0 };
	devmem_part *e;

	pthread_mutex_lock(&parts_lock);
	e = part_of(sh);
	if (e)
		p = *e;
	pthread_mutex_unlock(&parts_lock);
	return p;
}

/* Says an engine-side failure (the first DEVMEM_MSGS of this softnic) and
 * returns its syndrome: a remote access error when the responder's
 * memory failed, else a local protection error. */
static int devmem_fail(const snx_shared *sh, uint8_t *vs, int remote, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int devmem_fail(const snx_shared *sh, uint8_t *vs, int remote, const char *fmt, ...)
{
	devmem_part *e;
	va_list ap;
	int say_it = 1;

	pthread_mutex_lock(&parts_lock);
	e = part_of(sh);
	if (e)
		say_it = e->msgs++ < DEVMEM_MSGS;
	pthread_mutex_unlock(&parts_lock);
	if (say_it) {
		fprintf(stderr, "softnic: GPU memory: ");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	return remote ? snx_fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR)
		      : snx_fail(vs, SOFTNIC_VSYND_LOCAL_ACCESS, GIC_SYND_LOCAL_PROT_ERR);
}

/* The part for sh, and the remote end dst translated into this process
 * (a multi-process softnic's peer memory). 0 or a syndrome. */
static int devmem_begin(const snx_shared *sh, const snx_qp *qp, uint8_t *dst, uint64_t len,
			uint32_t dev, devmem_part *part, uint8_t **out, uint8_t *vs)
{
	*part = part_get(sh);
	*out = dst;
	if (!part->ops)
		return devmem_fail(sh, vs, dev & SNX_DEV_REMOTE,
				   "QP 0x%x: a region in GPU memory, and this softnic has no CUDA "
				   "part (softnic_cuda_devmem_enable was not called, or a build "
				   "without CUDA)", qp->qpn);
	if ((dev & SNX_DEV_REMOTE) && part->nic->shm)
		return softnic_shm_dev_translate(sh, qp, dst, len, out, vs);
	return 0;
}

/* Moves a write's or a read's bytes between the local pieces (inline
 * data or resolved SGEs) and the peer's range starting at remote, in the
 * direction to_remote says. */
static int devmem_move_list(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
			    uint8_t *const local[SOFTNIC_MAX_SGE], uint8_t *remote, uint32_t dev,
			    int to_remote, uint8_t *vs)
{
	devmem_seg seg[SOFTNIC_MAX_SGE + 1];
	devmem_part part;
	uint8_t *r;
	char why[160] = "";
	int n = 0, rc = devmem_begin(sh, qp, remote, w->total_len, dev, &part, &r, vs);

	if (rc)
		return rc;
	if (w->inline_len) /* writes only: the decoder refuses an inline read */
		seg[n++] = (devmem_seg){ r, w->inline_data, w->inline_len };
	for (uint32_t i = 0; i < w->num_sge && i < SOFTNIC_MAX_SGE; i++) {
		seg[n++] = to_remote ? (devmem_seg){ r, local[i], w->sge[i].len }
				     : (devmem_seg){ local[i], r, w->sge[i].len };
		r += w->sge[i].len;
	}
	rc = n ? part.ops->move(part.ctx, seg, n, why, sizeof(why)) : 0;
	if (rc)
		return devmem_fail(sh, vs, dev & SNX_DEV_REMOTE, "QP 0x%x: a %llu-byte %s: %s",
				   qp->qpn, (unsigned long long)w->total_len,
				   to_remote ? "write" : "read", why);
	return 0;
}

int softnic_dev_write(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
		      uint8_t *const src[SOFTNIC_MAX_SGE], uint8_t *dst, uint32_t dev, uint8_t *vs)
{
	return devmem_move_list(sh, qp, w, src, dst, dev, 1, vs);
}

int softnic_dev_read(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
		     uint8_t *const dst[SOFTNIC_MAX_SGE], uint8_t *src, uint32_t dev, uint8_t *vs)
{
	return devmem_move_list(sh, qp, w, dst, src, dev, 0, vs);
}

int softnic_dev_atomic(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
		       uint8_t *dst, uint8_t *res, uint32_t dev, uint8_t *vs)
{
	devmem_atomic a = { w->opcode, w->atomic_size, w->atomic_add, w->atomic_cmp,
			    w->atomic_swap_mask, w->atomic_cmp_mask };
	devmem_part part;
	uint64_t old = 0;
	uint8_t val[8];
	uint8_t *t;
	char why[160] = "";
	int rc = devmem_begin(sh, qp, dst, w->atomic_size, dev, &part, &t, vs);

	if (rc)
		return rc;
	if (dev & SNX_DEV_REMOTE) {
		rc = part.ops->atomic(part.ctx, &a, t, &old, why, sizeof(why));
	} else {
		rc = snx_atomic_run(w, t, &old);
		if (rc)
			return snx_fail(vs, (uint8_t)rc, GIC_SYND_REMOTE_OP_ERR);
	}
	if (rc)
		return devmem_fail(sh, vs, 1, "QP 0x%x: a %u-byte atomic (opcode 0x%x): %s", qp->qpn,
				   w->atomic_size, w->opcode, why);
	snx_atomic_result(old, w->atomic_size, val);
	if (dev & SNX_DEV_LOCAL) {
		devmem_seg seg = { res, val, w->atomic_size };

		rc = part.ops->move(part.ctx, &seg, 1, why, sizeof(why));
		if (rc)
			return devmem_fail(sh, vs, 0, "QP 0x%x: an atomic's fetched value: %s",
					   qp->qpn, why);
	} else {
		memcpy(res, val, w->atomic_size);
	}
	return 0;
}
