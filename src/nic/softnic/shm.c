/*
 * softnic across processes (gic/softnic_shm.h): the job's shared-memory
 * arenas at one address in every process, the arena allocator behind the
 * softnic's engine state and queues, remote connection by (rank, qpn), the
 * watchdog that finds vanished peers, and GPU regions (the table of
 * exported buffers, and the translation of peers' GPU addresses into
 * buffers opened here, shm_gpu.h; devmem.c moves the bytes).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "gic/softnic_shm.h"
#include "softnic_internal.h"
#include "engine_core.h"
#include "shm_gpu.h"

#define SHM_MAGIC 0x31304d4853434947ull      /* "GICSHM01" */
#define SHM_ALIGN ((size_t)2 << 20)          /* arenas and the base: 2 MiB */
#define SHM_MIN_BYTES ((size_t)1 << 20)
#define SHM_MAX_BYTES ((size_t)64 << 30)
#define SHM_TICK_NS 2000000L                 /* watchdog period */
#define SHM_ZOMBIE_NS 100000000ull           /* heartbeat stopped: look for a zombie */
#define SHM_STALE_NS 5000000000ull           /* heartbeat stopped: gone */

enum {
	SHM_HDR_BYTES = 4096,  /* the header's page; allocations start after it */
	SHM_TRIES = 8,         /* base addresses tried before EADDRINUSE */
	SHM_MAX_PES = 1024,
	SHM_WHY_LEN = 96,
	SHM_GPU_MAX = 32,      /* exported GPU allocations per PE */
	SHM_GPU_MSGS = 16,     /* engine-side GPU failures printed per softnic */
	SHM_LIVE_MAX = 64,     /* shared softnics open at once in one process */
};

enum shm_state { SHM_CREATING = 0, SHM_READY = 1, SHM_CLOSED = 2 };

/* The first bytes of every arena: who owns it and whether it lives. */
typedef struct shm_header {
	uint64_t magic;
	uint64_t job;
	uint64_t span;
	uint64_t shared;    /* address of the owner's snx_shared, once READY */
	uint64_t heartbeat; /* bumped by the owner's watchdog every tick */
	int32_t rank;
	int32_t size;
	int32_t pid;
	uint32_t state;     /* enum shm_state, release-stored */
	uint32_t ngpu;      /* entries of gpu[] in use, release-stored after each */
	uint32_t pad;
	shm_gpu_buf gpu[SHM_GPU_MAX]; /* GPU allocations exported to peers */
} shm_header;

_Static_assert(sizeof(shm_header) <= SHM_HDR_BYTES, "the arena header outgrew its page");

typedef struct shm_block {
	size_t off, len;
} shm_block;

/* A peer's exported GPU allocation, as opened in this process. */
typedef struct shm_opened {
	void *ptr;    /* its base here, once open */
	int state;    /* 0: not tried, 1: open, -1: failed (said once) */
} shm_opened;

/* What this process's watchdog knows of one peer. */
typedef struct shm_peer {
	uint64_t last_beat;
	uint64_t changed_ns;
	uint32_t gone;           /* release-stored once, after why */
	char why[SHM_WHY_LEN];
} shm_peer;

struct softnic_shm {
	int rank, size;
	uint64_t job;
	size_t span;             /* bytes of one arena */
	uint8_t *base;           /* arena r at base + r * span */
	softnic *nic;
	softnic_allocator queue_mem;
	pthread_mutex_t lock;    /* the block list */
	shm_block *blocks;       /* this PE's allocations, sorted by offset */
	int nblocks, cap;
	shm_peer *peers;
	pthread_t watchdog;
	int watchdog_running;
	uint32_t stop;
	/* GPU regions (shm_gpu.h), once the CUDA part is attached. */
	const shm_gpu_ops *gops;
	void *gctx;
	pthread_mutex_t gpu_lock;  /* opened, gpu_msgs, this PE's ngpu */
	shm_opened *opened;        /* size x SHM_GPU_MAX */
	int gpu_msgs;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static shm_header *arena(const softnic_shm *s, int r)
{
	return (shm_header *)(s->base + (size_t)r * s->span);
}

static void shm_name(char *buf, size_t len, uint64_t job, int rank)
{
	snprintf(buf, len, "/gic-%016llx-%d", (unsigned long long)job, rank);
}

static void say(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int rank, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "softnic_open_shared: PE %d: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* The arena allocator: first fit over this PE's arena, metadata in the
 * process (peers never allocate in another PE's arena). */

void *softnic_shm_alloc(softnic_shm *s, size_t size, size_t align)
{
	size_t cur = SHM_HDR_BYTES, at = 0;
	int i;

	if (!size)
		size = 1;
	if (align < 16)
		align = 16;
	pthread_mutex_lock(&s->lock);
	if (s->nblocks == s->cap) {
		int cap = s->cap ? 2 * s->cap : 64;
		shm_block *b = realloc(s->blocks, (size_t)cap * sizeof(*b));

		if (!b) {
			pthread_mutex_unlock(&s->lock);
			errno = ENOMEM;
			return NULL;
		}
		s->blocks = b;
		s->cap = cap;
	}
	for (i = 0; i <= s->nblocks; i++) {
		size_t end = i < s->nblocks ? s->blocks[i].off : s->span;

		at = (cur + align - 1) & ~(align - 1);
		if (at <= end && end - at >= size)
			break;
		if (i < s->nblocks)
			cur = s->blocks[i].off + s->blocks[i].len;
	}
	if (i > s->nblocks) {
		pthread_mutex_unlock(&s->lock);
		errno = ENOMEM;
		return NULL;
	}
	memmove(&s->blocks[i + 1], &s->blocks[i], (size_t)(s->nblocks - i) * sizeof(shm_block));
	s->blocks[i].off = at;
	s->blocks[i].len = size;
	s->nblocks++;
	pthread_mutex_unlock(&s->lock);
	memset((uint8_t *)arena(s, s->rank) + at, 0, size);
	return (uint8_t *)arena(s, s->rank) + at;
}

void softnic_shm_free(softnic_shm *s, void *p)
{
	size_t off = (size_t)((uint8_t *)p - (uint8_t *)arena(s, s->rank));

	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->nblocks; i++) {
		if (s->blocks[i].off == off) {
			memmove(&s->blocks[i], &s->blocks[i + 1],
				(size_t)(s->nblocks - i - 1) * sizeof(shm_block));
			s->nblocks--;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

static void *queue_alloc(size_t size, size_t align, void *ctx)
{
	return softnic_shm_alloc(ctx, size, align);
}

static void queue_free(void *p, void *ctx)
{
	softnic_shm_free(ctx, p);
}

void *softnic_shared_alloc(softnic *nic, size_t size, size_t align)
{
	if (!align)
		align = 64;
	if (!nic || !nic->shm || !size || align > 4096 || (align & (align - 1))) {
		if (nic)
			softnic_set_error(nic, "shared_alloc: %s (size %zu, align %zu)",
					  nic->shm ? "bad size or alignment" : "not a shared softnic",
					  size, align);
		errno = EINVAL;
		return NULL;
	}
	void *p = softnic_shm_alloc(nic->shm, size, align);

	if (!p)
		softnic_set_error(nic, "shared_alloc: %zu bytes do not fit in PE %d's arena of %zu "
				  "bytes", size, nic->shm->rank, nic->shm->span);
	return p;
}

void softnic_shared_free(softnic *nic, void *p)
{
	if (nic && nic->shm && p)
		softnic_shm_free(nic->shm, p);
}

uint32_t softnic_shm_first_pd(const softnic_shm *s)
{
	return ((uint32_t)s->rank + 1) << 20 | 1;
}

int softnic_shm_check_mr(softnic *nic, const void *addr, size_t len, int access)
{
	const int remote = SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ |
			   SOFTNIC_ACCESS_REMOTE_ATOMIC;
	const uint8_t *lo = (const uint8_t *)arena(nic->shm, nic->shm->rank) + SHM_HDR_BYTES;
	const uint8_t *hi = (const uint8_t *)arena(nic->shm, nic->shm->rank) + nic->shm->span;
	const uint8_t *a = addr;

	if (!(access & remote) || (a >= lo && a <= hi && len <= (size_t)(hi - a)))
		return 0;
	softnic_set_error(nic, "reg_mr: a region peers may access (access 0x%x) must lie in this "
			  "PE's shared arena [%p, %p) (softnic_shared_alloc); [%p, +%zu) does not",
			  access, (const void *)lo, (const void *)hi, addr, len);
	return EINVAL;
}

/* ------------------------------------------------------------------ */
/* Remote connections. */

/* PE r's QP qpn, its softnic's shared state in *psh; NULL when PE r has
 * no such QP. */
static snx_qp *find_peer_qp(softnic_shm *s, int r, uint32_t qpn, snx_shared **psh)
{
	shm_header *h = arena(s, r);
	snx_shared *sh = (snx_shared *)(uintptr_t)__atomic_load_n(&h->shared, __ATOMIC_ACQUIRE);
	uint32_t n = __atomic_load_n(&sh->nqp_slots, __ATOMIC_ACQUIRE);

	*psh = sh;
	for (uint32_t i = 0; i < n && i < SNX_MAX_QP; i++) {
		snx_qp *q = __atomic_load_n(&sh->qps[i], __ATOMIC_ACQUIRE);

		if (q && q->qpn == qpn)
			return q;
	}
	return NULL;
}

int softnic_qp_connect_remote(softnic_qp *qp, int peer_rank, uint32_t peer_qpn)
{
	softnic *nic;
	softnic_shm *s;
	snx_shared *psh;
	snx_qp *pq;
	engine *e;

	if (!qp)
		return EINVAL;
	nic = qp->nic;
	s = nic->shm;
	if (!s || peer_rank < 0 || peer_rank >= s->size || peer_rank == s->rank) {
		softnic_set_error(nic, "qp_connect_remote: %s (peer PE %d)",
				  !s ? "not a shared softnic (softnic_open_shared)"
				     : "peer rank out of range or this PE's own", peer_rank);
		return EINVAL;
	}
	if (__atomic_load_n(&s->peers[peer_rank].gone, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&arena(s, peer_rank)->state, __ATOMIC_ACQUIRE) != SHM_READY) {
		softnic_set_error(nic, "qp_connect_remote: PE %d is gone or closed its softnic",
				  peer_rank);
		return EHOSTDOWN;
	}
	pq = find_peer_qp(s, peer_rank, peer_qpn, &psh);
	if (!pq) {
		softnic_set_error(nic, "qp_connect_remote: PE %d has no QP 0x%x", peer_rank,
				  peer_qpn);
		return ENOENT;
	}
	if ((qp->s->flags | pq->flags) & (SOFTNIC_QP_DCI | SOFTNIC_QP_DCT)) {
		softnic_set_error(nic, "qp_connect_remote: QP 0x%x or PE %d's QP 0x%x is a DCI or "
				  "DCT: DC QPs are never connected", qp->s->qpn, peer_rank, peer_qpn);
		return EINVAL;
	}
	if (qp->peer || __atomic_load_n(&qp->s->link, __ATOMIC_ACQUIRE)) {
		softnic_set_error(nic, "qp_connect_remote: QP 0x%x is already connected",
				  qp->s->qpn);
		return EISCONN;
	}
	e = &nic->engines[qp->engine];
	/* Under the lock the watchdog takes to mark a peer's QPs gone: either
	 * it sees this QP connected and moves it, or this sees the peer gone. */
	pthread_mutex_lock(&nic->lock);
	if (__atomic_load_n(&s->peers[peer_rank].gone, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&nic->lock);
		softnic_set_error(nic, "qp_connect_remote: PE %d is gone", peer_rank);
		return EHOSTDOWN;
	}
	engine_lock_mgmt(e);
	__atomic_store_n(&qp->s->peer, pq, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->s->peer_sh, psh, __ATOMIC_RELAXED);
	/* Publishes the peer pointers before the link state engines check. */
	__atomic_store_n(&qp->s->link, SNX_QP_CONNECTED, __ATOMIC_RELEASE);
	engine_unlock_mgmt(e);
	pthread_mutex_unlock(&nic->lock);
	return 0;
}

void softnic_shm_qp_destroyed(softnic *nic, softnic_qp *qp)
{
	snx_qp *me = qp->s, *pq = __atomic_load_n(&me->peer, __ATOMIC_RELAXED);
	uint32_t connected = SNX_QP_CONNECTED;

	(void)nic;
	/* The peer's half, if it points back at this QP, loses its peer now
	 * (its arena is mapped here: the store is safe even if it exited). */
	if (pq && __atomic_load_n(&pq->peer, __ATOMIC_RELAXED) == me)
		__atomic_compare_exchange_n(&pq->link, &connected, SNX_QP_PEER_GONE, 0,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

int softnic_shared_peer_gone(softnic *nic, int rank, const char **why)
{
	softnic_shm *s = nic ? nic->shm : NULL;
	int gone;

	if (!s || rank < 0 || rank >= s->size)
		return -1;
	gone = rank != s->rank && __atomic_load_n(&s->peers[rank].gone, __ATOMIC_ACQUIRE);
	if (why)
		*why = gone ? s->peers[rank].why : "";
	return gone;
}

/* ------------------------------------------------------------------ */
/* GPU regions (shm_gpu.h). */

/* The shared softnics of this process, for the engine's hooks (which get
 * their softnic's snx_shared): each entry's own-arena range, kept here so
 * that a lookup never reads a softnic being closed. */
static struct {
	const uint8_t *lo, *hi;
	softnic_shm *s;
} live[SHM_LIVE_MAX];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void live_add(softnic_shm *s)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < SHM_LIVE_MAX; i++) {
		if (!live[i].s) {
			live[i].lo = (const uint8_t *)arena(s, s->rank);
			live[i].hi = live[i].lo + s->span;
			live[i].s = s;
			break;
		}
	}
	pthread_mutex_unlock(&live_lock); /* full: its GPU regions fail, said then */
}

static void live_remove(softnic_shm *s)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < SHM_LIVE_MAX; i++)
		if (live[i].s == s)
			live[i].s = NULL;
	pthread_mutex_unlock(&live_lock);
}

/* The softnic whose arena holds p (its snx_shared), or NULL. */
static softnic_shm *live_find(const void *p)
{
	softnic_shm *s = NULL;

	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < SHM_LIVE_MAX && !s; i++)
		if (live[i].s && (const uint8_t *)p >= live[i].lo && (const uint8_t *)p < live[i].hi)
			s = live[i].s;
	pthread_mutex_unlock(&live_lock);
	return s;
}

int softnic_shm_arena(softnic *nic, void **arena_p, size_t *bytes)
{
	softnic_shm *s = nic ? nic->shm : NULL;

	if (!s)
		return EINVAL;
	*arena_p = arena(s, s->rank);
	*bytes = s->span;
	return 0;
}

int softnic_shm_gpu_attach(softnic *nic, const shm_gpu_ops *ops, void *ctx)
{
	softnic_shm *s = nic ? nic->shm : NULL;
	int rc = 0;

	if (!s || !ops)
		return EINVAL;
	pthread_mutex_lock(&s->gpu_lock);
	if (s->gops) {
		rc = EINVAL;
	} else {
		s->opened = calloc((size_t)s->size * SHM_GPU_MAX, sizeof(*s->opened));
		rc = s->opened ? 0 : ENOMEM;
	}
	if (!rc) {
		s->gctx = ctx;
		/* The engines read gops without the lock: published last. */
		__atomic_store_n(&s->gops, ops, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->gpu_lock);
	return rc;
}

void *softnic_shm_gpu_ctx(softnic *nic)
{
	softnic_shm *s = nic ? nic->shm : NULL;

	return s && __atomic_load_n(&s->gops, __ATOMIC_ACQUIRE) ? s->gctx : NULL;
}

int softnic_shm_gpu_export(softnic *nic, const shm_gpu_buf *b)
{
	softnic_shm *s = nic ? nic->shm : NULL;
	shm_header *h;
	uint32_t n;
	int rc = 0;

	if (!s || !__atomic_load_n(&s->gops, __ATOMIC_ACQUIRE))
		return EINVAL;
	h = arena(s, s->rank);
	pthread_mutex_lock(&s->gpu_lock);
	n = h->ngpu;
	for (uint32_t i = 0; i < n; i++) {
		if (h->gpu[i].base == b->base) {
			rc = h->gpu[i].len == b->len ? 0 : EEXIST;
			pthread_mutex_unlock(&s->gpu_lock);
			return rc;
		}
	}
	if (n == SHM_GPU_MAX) {
		rc = ENOSPC;
	} else {
		h->gpu[n] = *b;
		/* Publishes the entry to peers' engines (acquire in gpu_find). */
		__atomic_store_n(&h->ngpu, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->gpu_lock);
	return rc;
}

/* Prints an engine-side GPU failure (the first SHM_GPU_MSGS of this
 * softnic) and returns the syndrome for it. */
static int gpu_fail(softnic_shm *s, uint8_t *vs, int remote, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int gpu_fail(softnic_shm *s, uint8_t *vs, int remote, const char *fmt, ...)
{
	va_list ap;
	int say_it = 1;

	if (s) {
		pthread_mutex_lock(&s->gpu_lock);
		say_it = s->gpu_msgs++ < SHM_GPU_MSGS;
		pthread_mutex_unlock(&s->gpu_lock);
	}
	if (say_it) {
		fprintf(stderr, "softnic PE %d: GPU region: ", s ? s->rank : -1);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	return remote ? snx_fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR)
		      : snx_fail(vs, SOFTNIC_VSYND_LOCAL_ACCESS, GIC_SYND_LOCAL_PROT_ERR);
}

/* Translates [addr, addr + len) of PE r's exported GPU memory into this
 * process (opening that buffer on first use). 0 or a syndrome. */
static int gpu_translate(softnic_shm *s, int r, uint64_t addr, uint64_t len, uint8_t **out,
			 uint8_t *vs)
{
	const shm_header *h = arena(s, r);
	uint32_t n = __atomic_load_n(&h->ngpu, __ATOMIC_ACQUIRE);
	shm_opened *o;
	char why[160] = "";
	int i, rc = 0;

	if (n > SHM_GPU_MAX)
		n = SHM_GPU_MAX;
	for (i = 0; i < (int)n; i++)
		if (addr >= h->gpu[i].base && addr - h->gpu[i].base <= h->gpu[i].len &&
		    len <= h->gpu[i].len - (addr - h->gpu[i].base))
			break;
	if (i == (int)n)
		return gpu_fail(s, vs, 1, "PE %d's region at 0x%llx (+%llu) is GPU memory that PE %d "
				"did not export", r, (unsigned long long)addr,
				(unsigned long long)len, r);
	o = &s->opened[(size_t)r * SHM_GPU_MAX + (size_t)i];
	pthread_mutex_lock(&s->gpu_lock);
	if (o->state == 0) {
		if (h->gpu[i].kind != SHM_GPU_KIND_CUDA_IPC) {
			snprintf(why, sizeof(why), "a buffer of kind 0x%x, which this process "
				 "cannot open (not a CUDA IPC handle)", h->gpu[i].kind);
			rc = EPROTO;
		} else {
			rc = s->gops->open(s->gctx, &h->gpu[i], &o->ptr, why, sizeof(why));
		}
		o->state = rc ? -1 : 1;
		pthread_mutex_unlock(&s->gpu_lock);
		if (rc)
			return gpu_fail(s, vs, 1, "cannot open PE %d's GPU buffer %d (GPU %d, 0x%llx, "
					"%llu bytes): %s", r, i, h->gpu[i].device,
					(unsigned long long)h->gpu[i].base,
					(unsigned long long)h->gpu[i].len, why);
	} else {
		pthread_mutex_unlock(&s->gpu_lock);
	}
	if (o->state < 0)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR);
	*out = (uint8_t *)o->ptr + (addr - h->gpu[i].base);
	return 0;
}

int softnic_shm_dev_translate(const snx_shared *sh, const snx_qp *qp, uint8_t *dst, uint64_t len,
			      uint8_t **out, uint8_t *vs)
{
	softnic_shm *s = live_find(sh);
	const uint8_t *peer = (const uint8_t *)qp->peer_sh;

	*out = dst;
	if (!peer)
		return 0; /* the destination is this process's own memory */
	if (!s || !__atomic_load_n(&s->gops, __ATOMIC_ACQUIRE))
		return gpu_fail(s, vs, 1, "QP 0x%x: a peer's region in GPU memory, and this process "
				"cannot open peers' GPU buffers (softnic_shared_cuda_enable was not "
				"called)", qp->qpn);
	if (peer < s->base || peer >= s->base + (size_t)s->size * s->span)
		return gpu_fail(s, vs, 1, "QP 0x%x: its peer is in no arena of this job", qp->qpn);
	return gpu_translate(s, (int)((size_t)(peer - s->base) / s->span), (uint64_t)(uintptr_t)dst,
			     len, out, vs);
}

/* At close, engines stopped: closes what was opened here, then lets the
 * CUDA part go. */
static void gpu_release(softnic_shm *s)
{
	if (!s->gops)
		return;
	for (size_t i = 0; i < (size_t)s->size * SHM_GPU_MAX; i++)
		if (s->opened[i].state == 1)
			s->gops->close(s->gctx, s->opened[i].ptr);
	s->gops->release(s->gctx);
	s->gops = NULL;
}

/* ------------------------------------------------------------------ */
/* The watchdog. */

/* Moves every QP of this softnic connected to PE r to PEER_GONE. */
static void mark_peer_gone(softnic_shm *s, int r)
{
	softnic *nic = s->nic;
	const uint8_t *lo = (const uint8_t *)arena(s, r), *hi = lo + s->span;

	pthread_mutex_lock(&nic->lock); /* the QP table cannot change under us */
	for (uint32_t i = 0; i < nic->shared->nqp_slots; i++) {
		snx_qp *q = __atomic_load_n(&nic->shared->qps[i], __ATOMIC_ACQUIRE);
		const uint8_t *p = q ? (const uint8_t *)__atomic_load_n(&q->peer, __ATOMIC_RELAXED)
				     : NULL;
		uint32_t connected = SNX_QP_CONNECTED;

		if (p && p >= lo && p < hi && __atomic_load_n(&q->peer_sh, __ATOMIC_RELAXED))
			__atomic_compare_exchange_n(&q->link, &connected, SNX_QP_PEER_GONE, 0,
						    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&nic->lock);
}

/* 1 when /proc says process pid is a zombie (exited, not yet reaped). */
static int is_zombie(int pid)
{
	char state;

	softnic_proc_start(pid, &state);
	return state == 'Z' || state == 'X';
}

/* Why PE r counts as gone now, or NULL while it lives. */
static const char *peer_check(softnic_shm *s, int r, uint64_t now, char *why, size_t len)
{
	shm_header *h = arena(s, r);
	shm_peer *p = &s->peers[r];
	uint64_t beat = __atomic_load_n(&h->heartbeat, __ATOMIC_RELAXED);
	int pid = h->pid;

	if (beat != p->last_beat) {
		p->last_beat = beat;
		p->changed_ns = now;
	}
	if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == SHM_CLOSED)
		snprintf(why, len, "PE %d closed its softnic", r);
	else if (kill(pid, 0) && errno == ESRCH)
		snprintf(why, len, "PE %d's process %d exited or was killed", r, pid);
	else if (now - p->changed_ns > SHM_ZOMBIE_NS && is_zombie(pid))
		snprintf(why, len, "PE %d's process %d exited (a zombie)", r, pid);
	else if (now - p->changed_ns > SHM_STALE_NS)
		snprintf(why, len, "PE %d's heartbeat stopped %llu ms ago", r,
			 (unsigned long long)((now - p->changed_ns) / 1000000u));
	else
		return NULL;
	return why;
}

static void *watchdog_main(void *arg)
{
	softnic_shm *s = arg;
	struct timespec tick = { 0, SHM_TICK_NS };
	uint64_t now = now_ns();

	for (int r = 0; r < s->size; r++) {
		s->peers[r].last_beat = __atomic_load_n(&arena(s, r)->heartbeat, __ATOMIC_RELAXED);
		s->peers[r].changed_ns = now;
	}
	/* A service loop, not a wait: it ends when close sets stop. */
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&tick, NULL);
		__atomic_fetch_add(&arena(s, s->rank)->heartbeat, 1, __ATOMIC_RELAXED);
		now = now_ns();
		for (int r = 0; r < s->size; r++) {
			char why[SHM_WHY_LEN];

			if (r == s->rank || __atomic_load_n(&s->peers[r].gone, __ATOMIC_RELAXED))
				continue;
			if (!peer_check(s, r, now, why, sizeof(why)))
				continue;
			memcpy(s->peers[r].why, why, sizeof(why));
			__atomic_store_n(&s->peers[r].gone, 1, __ATOMIC_RELEASE);
			mark_peer_gone(s, r);
		}
	}
	return NULL;
}

void softnic_shm_stop(softnic *nic)
{
	softnic_shm *s = nic->shm;

	if (s->watchdog_running) {
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		pthread_join(s->watchdog, NULL);
		s->watchdog_running = 0;
	}
	/* Peers' watchdogs move their QPs to us to PEER_GONE. */
	__atomic_store_n(&arena(s, s->rank)->state, SHM_CLOSED, __ATOMIC_RELEASE);
}

void softnic_shm_release(softnic_shm *s)
{
	live_remove(s);
	gpu_release(s);
	if (s->base)
		munmap(s->base, (size_t)s->size * s->span);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->gpu_lock);
	free(s->blocks);
	free(s->peers);
	free(s->opened);
	free(s);
}

/* ------------------------------------------------------------------ */
/* Opening: every step ends in an exchange of outcomes, so every PE fails
 * together and the bootstrap's collectives stay matched. */

/* Exchanges this PE's outcome mine (0 or an errno) of step. Returns 0
 * when every PE succeeded; else mine, ECONNABORTED (another PE failed) or
 * the bootstrap's error. */
static int agree(gic_boot *b, int mine, const char *step, uint64_t timeout_ns)
{
	int size = gic_boot_size(b), rank = gic_boot_rank(b), first = -1;
	int32_t m = mine, *all = calloc((size_t)size, sizeof(*all));
	int rc;

	if (!all)
		return ENOMEM; /* the others time out: nothing better to do */
	rc = gic_boot_allgather(b, &m, sizeof(m), all, timeout_ns);
	if (rc) {
		say(rank, "%s: bootstrap exchange failed: %s", step, gic_boot_last_error(b));
		free(all);
		return rc;
	}
	for (int r = 0; r < size && first < 0; r++)
		if (all[r])
			first = r;
	if (first >= 0 && !mine)
		say(rank, "%s: PE %d failed (%s); giving up too", step, first, strerror(all[first]));
	free(all);
	return mine ? mine : first >= 0 ? ECONNABORTED : 0;
}

/* Rank 0's proposal: a span of total bytes at a 2 MiB boundary, chosen by
 * the kernel (inside the ranges a sanitizer allows) and held PROT_NONE.
 * 0 when the address space is exhausted. */
static uint64_t propose_span(size_t total)
{
	uint8_t *r = mmap(NULL, total + SHM_ALIGN, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *a;

	if (r == MAP_FAILED)
		return 0;
	a = (uint8_t *)(((uintptr_t)r + SHM_ALIGN - 1) & ~(uintptr_t)(SHM_ALIGN - 1));
	if (a > r)
		munmap(r, (size_t)(a - r));
	if (a + total < r + total + SHM_ALIGN)
		munmap(a + total, (size_t)(r + total + SHM_ALIGN - (a + total)));
	return (uint64_t)(uintptr_t)a;
}

/* A process other than rank 0 claims [base, base + total); 1 when it holds it. */
static int claim_span(uint8_t *base, size_t total)
{
	void *p = mmap(base, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		       MAP_FIXED_NOREPLACE, -1, 0);

	if (p != MAP_FAILED && p != base) /* a kernel without NOREPLACE */
		munmap(p, total);
	return p == base;
}

/* One try of place_job: rank 0 proposes (mine[0]: base, mine[1]: job id),
 * everyone else claims the span, and all learn whether all hold it. 0
 * (s->base set), EADDRINUSE (try again; *proposed: rank 0's span, held),
 * ENOMEM, or the bootstrap's error. */
static int place_try(softnic_shm *s, gic_boot *b, uint64_t mine[2], uint64_t *all, int32_t *oks,
		     uint8_t **proposed, uint64_t timeout_ns)
{
	size_t total = (size_t)s->size * s->span;
	int32_t ok = 1, all_ok = 1;
	uint8_t *base;
	int rc;

	*proposed = NULL;
	if (s->rank == 0)
		mine[0] = propose_span(total);
	rc = gic_boot_allgather(b, mine, 2 * sizeof(uint64_t), all, timeout_ns);
	if (rc) {
		say(s->rank, "placing the arenas: bootstrap exchange failed: %s",
		    gic_boot_last_error(b));
		if (mine[0])
			munmap((void *)(uintptr_t)mine[0], total);
		return rc;
	}
	base = (uint8_t *)(uintptr_t)all[0];
	s->job = all[1];
	if (!base) {
		if (s->rank == 0)
			say(0, "could not reserve %zu bytes of address space: %s", total,
			    strerror(errno));
		return ENOMEM;
	}
	if (s->rank != 0)
		ok = claim_span(base, total);
	rc = gic_boot_allgather(b, &ok, sizeof(ok), oks, timeout_ns);
	if (rc) {
		say(s->rank, "placing the arenas: bootstrap exchange failed: %s",
		    gic_boot_last_error(b));
		if (ok)
			munmap(base, total);
		return rc;
	}
	for (int r = 0; r < s->size; r++)
		all_ok &= oks[r];
	if (all_ok) {
		s->base = base;
		return 0;
	}
	if (ok && s->rank != 0)
		munmap(base, total);
	if (s->rank == 0)
		*proposed = base; /* held, so that the next try gets another span */
	return EADDRINUSE;
}

/* Agrees on the job id and a base address free for the whole job span in
 * every process; on success every process holds a PROT_NONE reservation
 * of it. */
static int place_job(softnic_shm *s, gic_boot *b, uint64_t timeout_ns)
{
	uint64_t mine[2] = { 0, 0 }, *all = calloc((size_t)s->size, sizeof(mine));
	int32_t *oks = calloc((size_t)s->size, sizeof(*oks));
	uint8_t *spare[SHM_TRIES];
	int nspare = 0, rc = EADDRINUSE;

	if (!all || !oks) {
		free(all);
		free(oks);
		return ENOMEM;
	}
	if (s->rank == 0 && getrandom(&mine[1], sizeof(mine[1]), 0) != sizeof(mine[1]))
		mine[1] = now_ns() ^ ((uint64_t)getpid() << 32);
	for (int t = 0; t < SHM_TRIES && rc == EADDRINUSE; t++) {
		uint8_t *held = NULL;

		rc = place_try(s, b, mine, all, oks, &held, timeout_ns);
		if (held)
			spare[nspare++] = held;
	}
	for (int i = 0; i < nspare; i++)
		munmap(spare[i], (size_t)s->size * s->span);
	if (rc == EADDRINUSE)
		say(s->rank, "no address span of %zu bytes was free in every process after %d "
		    "tries", (size_t)s->size * s->span, SHM_TRIES);
	free(all);
	free(oks);
	return rc;
}

/* Takes every page of the arena now (posix_fallocate), so that a full
 * /dev/shm is an error here instead of a SIGBUS when a page is first
 * touched. */
static int reserve_arena(softnic_shm *s, int fd, const char *name)
{
	struct statvfs v;
	int rc = posix_fallocate(fd, 0, (off_t)s->span);

	if (!rc)
		return 0;
	if (!fstatvfs(fd, &v))
		say(s->rank, "reserving the %zu-byte arena %s: %s (/dev/shm has %llu MiB free of "
		    "%llu MiB: ask for smaller arenas or make /dev/shm larger)", s->span, name,
		    strerror(rc), (unsigned long long)(v.f_bavail * v.f_frsize >> 20),
		    (unsigned long long)(v.f_blocks * v.f_frsize >> 20));
	else
		say(s->rank, "reserving the %zu-byte arena %s: %s", s->span, name, strerror(rc));
	return rc;
}

/* Creates and maps this PE's arena at its place and writes its header. */
static int create_arena(softnic_shm *s)
{
	char name[64];
	int fd, rc = 0;
	void *p;

	shm_name(name, sizeof(name), s->job, s->rank);
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) {
		rc = errno;
		say(s->rank, "shm_open(%s): %s", name, strerror(rc));
		return rc;
	}
	if (ftruncate(fd, (off_t)s->span)) {
		rc = errno;
		say(s->rank, "ftruncate(%s, %zu): %s", name, s->span, strerror(rc));
	}
	if (!rc)
		rc = reserve_arena(s, fd, name);
	p = rc ? MAP_FAILED : mmap(arena(s, s->rank), s->span, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_FIXED, fd, 0);
	if (!rc && p == MAP_FAILED) {
		rc = errno;
		say(s->rank, "mmap of %s at %p: %s", name, (void *)arena(s, s->rank), strerror(rc));
	}
	close(fd);
	if (rc)
		return rc;
	shm_header *h = arena(s, s->rank);

	h->job = s->job;
	h->span = s->span;
	h->rank = s->rank;
	h->size = s->size;
	h->pid = (int32_t)getpid();
	__atomic_store_n(&h->magic, SHM_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* Maps PE r's arena at its place and checks its header. */
static int map_peer(softnic_shm *s, int r)
{
	char name[64];
	struct stat st;
	shm_header *h = arena(s, r);
	int fd, rc = 0;
	void *p;

	shm_name(name, sizeof(name), s->job, r);
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0) {
		rc = errno;
		say(s->rank, "shm_open(%s) of PE %d: %s", name, r, strerror(rc));
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = errno;
		say(s->rank, "fstat(%s) of PE %d: %s", name, r, strerror(rc));
		close(fd);
		return rc;
	}
	if ((size_t)st.st_size != s->span) {
		say(s->rank, "%s of PE %d is %lld bytes, not %zu", name, r, (long long)st.st_size,
		    s->span);
		close(fd);
		return EPROTO;
	}
	p = mmap(h, s->span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	rc = p == MAP_FAILED ? errno : 0;
	close(fd);
	if (rc) {
		say(s->rank, "mmap of %s (PE %d) at %p: %s", name, r, (void *)h, strerror(rc));
		return rc;
	}
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SHM_MAGIC || h->job != s->job ||
	    h->rank != r || h->size != s->size || h->span != s->span) {
		say(s->rank, "%s does not hold PE %d's arena header of this job", name, r);
		return EPROTO;
	}
	return 0;
}

/* Maps every other PE's arena. */
static int map_peers(softnic_shm *s)
{
	for (int r = 0; r < s->size; r++) {
		int rc = r == s->rank ? 0 : map_peer(s, r);

		if (rc)
			return rc;
	}
	return 0;
}

static void unlink_all(const softnic_shm *s)
{
	for (int r = 0; r < s->size; r++) {
		char name[64];

		shm_name(name, sizeof(name), s->job, r);
		shm_unlink(name); /* ENOENT: never created or already gone */
	}
}

/* A new softnic_shm for boot's PE (not yet placed), or NULL (ENOMEM). */
static softnic_shm *shm_new(gic_boot *boot, size_t arena_bytes)
{
	softnic_shm *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->rank = gic_boot_rank(boot);
	s->size = gic_boot_size(boot);
	s->span = (arena_bytes + SHM_ALIGN - 1) & ~(SHM_ALIGN - 1);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->gpu_lock, NULL);
	s->peers = s->size > 0 && s->size <= SHM_MAX_PES ?
		   calloc((size_t)s->size, sizeof(*s->peers)) : NULL;
	return s;
}

/* Step 1: this PE's arguments are sound (mine, 0 or an errno) and every
 * PE asks for the same arena size. */
static int agree_args(softnic_shm *s, gic_boot *boot, int mine, uint64_t timeout_ns)
{
	uint64_t span = mine ? 0 : s->span, *all = calloc((size_t)s->size, sizeof(*all));
	int rc;

	if (!all)
		return ENOMEM; /* the others time out: nothing better to do */
	rc = gic_boot_allgather(boot, &span, sizeof(span), all, timeout_ns);
	if (rc)
		say(s->rank, "bootstrap exchange failed: %s", gic_boot_last_error(boot));
	for (int r = 0; r < s->size && !rc; r++) {
		if (all[r] != span) {
			if (span && all[r])
				say(s->rank, "PE %d asks for %llu-byte arenas, this PE for %llu", r,
				    (unsigned long long)all[r], (unsigned long long)span);
			rc = mine ? mine : EINVAL;
		}
	}
	if (!rc && !span) /* every PE failed its own check alike */
		rc = mine;
	free(all);
	return rc;
}

/* Step 3: each PE creates its arena, then maps everyone else's; then the
 * names go (every process has mapped every arena). *named: whether names
 * may exist when this fails. */
static int make_arenas(softnic_shm *s, gic_boot *boot, uint64_t timeout_ns, int *named)
{
	char name[64];
	int rc;

	*named = 1;
	rc = agree(boot, create_arena(s), "creating the arena", timeout_ns);
	if (!rc)
		rc = agree(boot, map_peers(s), "mapping the peers' arenas", timeout_ns);
	if (!rc) {
		shm_name(name, sizeof(name), s->job, s->rank);
		shm_unlink(name);
		*named = 0;
	}
	return rc;
}

/* Step 4: the softnic, its state in the arena, and its watchdog. */
static int open_engine(softnic_shm *s, gic_boot *boot, softnic_attr a, uint64_t timeout_ns,
		       softnic **nicp)
{
	softnic *nic;
	int mine = 0;

	s->queue_mem = (softnic_allocator){ .alloc = queue_alloc, .free = queue_free, .ctx = s };
	a.queue_mem = &s->queue_mem;
	nic = softnic_open_ext(&a, NULL, s);
	if (!nic) {
		mine = errno ? errno : ENOMEM;
		say(s->rank, "softnic_open: %s", strerror(mine));
	} else {
		s->nic = nic;
		live_add(s);
		__atomic_store_n(&arena(s, s->rank)->shared, (uint64_t)(uintptr_t)nic->shared,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&arena(s, s->rank)->state, SHM_READY, __ATOMIC_RELEASE);
		mine = pthread_create(&s->watchdog, NULL, watchdog_main, s);
		if (mine)
			say(s->rank, "watchdog thread: %s", strerror(mine));
		s->watchdog_running = !mine;
	}
	*nicp = nic;
	return agree(boot, mine, "opening the softnic", timeout_ns);
}

softnic *softnic_open_shared(const softnic_attr *attr, gic_boot *boot, size_t arena_bytes,
			     uint64_t timeout_ns)
{
	softnic_attr a = { .engine_threads = 1 };
	softnic_shm *s;
	softnic *nic = NULL;
	int rc = 0, named = 0;

	if (!boot) {
		errno = EINVAL;
		return NULL;
	}
	if (attr)
		a = *attr;
	s = shm_new(boot, arena_bytes);
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	if (a.queue_mem || arena_bytes < SHM_MIN_BYTES || arena_bytes > SHM_MAX_BYTES ||
	    s->size > SHM_MAX_PES) {
		say(s->rank, "bad arguments (queue_mem must be NULL, arena_bytes %zu in [1 MiB, "
		    "64 GiB], at most %d PEs)", arena_bytes, SHM_MAX_PES);
		rc = EINVAL;
	} else if (!s->peers) {
		rc = ENOMEM;
	}
	rc = agree_args(s, boot, rc, timeout_ns);
	if (!rc)
		rc = place_job(s, boot, timeout_ns);
	if (!rc)
		rc = make_arenas(s, boot, timeout_ns, &named);
	if (!rc)
		rc = open_engine(s, boot, a, timeout_ns, &nic);
	if (!rc)
		return nic;
	if (named)
		unlink_all(s);
	if (nic) {
		softnic_close(nic); /* releases s too */
	} else {
		if (s->base) {
			munmap(s->base, (size_t)s->size * s->span);
			s->base = NULL;
		}
		softnic_shm_release(s);
	}
	errno = rc;
	return NULL;
}
