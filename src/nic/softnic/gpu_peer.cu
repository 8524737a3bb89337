/*
 * GPU engines of different processes as RC peers (gic/softnic_gpu_peer.h):
 * the export page with its mirrors, the peers' pages and regions opened
 * here, the map the engine translates remote addresses with, and the
 * thread that keeps them current.
 *
 * Every CUDA call of this part runs on its own non-blocking stream (never
 * behind the engine kernel) and every wait has a time limit.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gic/softnic_gpu.h"
#include "gic/softnic_gpu_peer.h"
#include "softnic_internal.h"
#include "ipc_cuda.h"

enum {
	GP_MAX_QP = 1024,      /* QPs of one softnic connected to peers */
	GP_MAX_BUF = 64,       /* allocations one softnic exports */
	GP_MAGIC = 0x52504750, /* "GPPR" */
	GP_TICK_US = 2000,
	GP_PD_SHIFT = 10,      /* PD numbers: pid << 10 | n, unique on the host */
};
#define GP_WAIT_NS 5000000000ull      /* one CUDA copy */
#define GP_CONNECT_NS 10000000000ull  /* the peer's QP naming ours */

/* The export page's directory (GPU memory, like the mirrors). Its
 * seqlock word is in the owner's host file (gp_host). */
typedef struct gp_dir {
	uint32_t nbuf;
	uint32_t pad;
	uint32_t qpn[GP_MAX_QP];      /* mirror i's QP number (0: free) */
	uint32_t peer_qpn[GP_MAX_QP]; /* the QP it is connected to */
	shm_gpu_buf bufs[GP_MAX_BUF];
	uint8_t mr_buf[SNX_MAX_MR];   /* the allocation each exported MR lies in */
} gp_dir;

/* The owner's host file (/dev/shm/gic-gpu-peer.<uid>.<pid>.<n>): what a
 * peer reads without touching the owner's GPU memory, which the driver may
 * unmap once the owner is gone (under MPS an access then faults the
 * reader's context). The owner writes the directory as a seqlock: version
 * odd, the body, version even. A closing owner sets closed and waits for
 * each importer to close its handles of the owner's memory (detached). */
typedef struct gp_host {
	uint64_t version;
	uint32_t closed;
	uint32_t pad;
	int32_t importer[SOFTNIC_GPU_PEER_MAX]; /* pids that opened the page (0: free slot) */
	uint32_t detached[SOFTNIC_GPU_PEER_MAX];
} gp_host;

/* GPU memory of its owner, mapped by its peers. The engine of a peer
 * reads table.mrs[] and qps[] as it reads its own state. */
typedef struct gp_page {
	gp_dir dir;
	snx_shared table;        /* the exported MRs (mrs[] only) */
	snx_qp qps[GP_MAX_QP];   /* mirrors: qpn, pd, flags, rights, in_error, rnr timer, link */
} gp_page;

typedef struct gp_rec {
	uint32_t magic, size;
	int32_t pid, device;
	uint64_t start;          /* the owner's start time (/proc/<pid>/stat) */
	shm_gpu_buf page;
	char host_name[64];      /* its host file (shm_open name) */
} gp_rec;
GIC_STATIC_ASSERT(sizeof(gp_rec) <= SOFTNIC_GPU_PEER_REC_BYTES, "the record fits its bytes");

/* A peer this process added. */
typedef struct gp_link {
	int used, gone;
	int detached;             /* we told it: nothing here touches its memory */
	gp_rec rec;
	gp_page *page;            /* its page, mapped here (NULL once detached) */
	gp_host *host;            /* its host file, mapped here */
	int slot;                 /* ours among its importers */
	snx_peer_map *map;        /* engine state: its MR slots as mapped here */
	void *opened[GP_MAX_BUF]; /* its allocations, mapped here */
	uint32_t nopened;
	uint64_t version;         /* of its directory, last read */
	gp_dir dir;               /* ... as read */
	snx_mr mrs[SNX_MAX_MR];   /* its mirrored table, as read */
} gp_link;

typedef struct gpu_peer_part {
	softnic *nic;
	int device;
	pthread_mutex_t lock;     /* everything below; one CUDA copy at a time */
	cudaStream_t stream;
	gp_page *page;            /* ours (device memory) */
	gp_host *host;            /* our host file */
	char host_name[64];
	gp_dir dir;               /* ours as written (we are its only writer) */
	uint8_t exported[SNX_MAX_MR];
	uint32_t mr_epoch;        /* our mirrored table's, as written */
	softnic_qp *mirrored[GP_MAX_QP]; /* our QPs with a mirror, by slot */
	int remote_slot[GP_MAX_QP];     /* ... the peer's mirror slot they use (-1: none yet) */
	uint32_t remote_qpn[GP_MAX_QP]; /* ... the peer's QP they are connected to */
	uint32_t shown_rights[GP_MAX_QP], shown_error[GP_MAX_QP];
	gp_link peers[SOFTNIC_GPU_PEER_MAX];
	pthread_t thread;
	int thread_on, stop;
} gpu_peer_part;

/* Waits for the part's stream with a time limit. 0, ETIMEDOUT or EIO. */
static int gp_wait(gpu_peer_part *g, const char *what)
{
	uint64_t end = gic_now_ns() + GP_WAIT_NS;
	cudaError_t e;

	while ((e = cudaStreamQuery(g->stream)) == cudaErrorNotReady) {
		if (gic_now_ns() > end) {
			softnic_set_error(g->nic, "gpu_peer: %s: no answer within 5 s", what);
			return ETIMEDOUT;
		}
		sched_yield();
	}
	if (e != cudaSuccess) {
		softnic_set_error(g->nic, "gpu_peer: %s: %s", what, cudaGetErrorString(e));
		cudaGetLastError();
		return EIO;
	}
	return 0;
}

/* One copy between host and GPU memory (either direction), waited for. */
static int gp_copy(gpu_peer_part *g, void *dst, const void *src, size_t n, const char *what)
{
	cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, g->stream);

	if (e != cudaSuccess) {
		softnic_set_error(g->nic, "gpu_peer: %s: %s", what, cudaGetErrorString(e));
		cudaGetLastError();
		return EIO;
	}
	return gp_wait(g, what);
}

/* Publishes our directory (seqlock: odd version, body, even version). */
static int gp_publish_dir(gpu_peer_part *g)
{
	int rc;

	__atomic_store_n(&g->host->version, g->host->version + 1, __ATOMIC_RELEASE);
	rc = gp_copy(g, &g->page->dir, &g->dir, sizeof(gp_dir), "directory");
	/* Orders the body's copy (waited for above) before the even version. */
	__atomic_store_n(&g->host->version, g->host->version + 1, __ATOMIC_RELEASE);
	return rc;
}

/* Reads a peer's directory consistently (a few tries); *version the one
 * it belongs to. 0, EAGAIN or an errno. */
static int gp_read_dir(gpu_peer_part *g, gp_link *l, uint64_t *version)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t v1 = __atomic_load_n(&l->host->version, __ATOMIC_ACQUIRE);
		int rc = (v1 & 1) ? 0 : gp_copy(g, &l->dir, &l->page->dir, sizeof(gp_dir),
						"peer's directory");

		if (rc)
			return rc;
		if (!(v1 & 1) && __atomic_load_n(&l->host->version, __ATOMIC_ACQUIRE) == v1) {
			*version = v1;
			return 0;
		}
		usleep(50);
	}
	return EAGAIN;
}

/* 1 while the process that made rec runs. */
static int gp_alive(const gp_rec *r)
{
	char state = '?';

	if (kill(r->pid, 0) && errno == ESRCH)
		return 0;
	return softnic_proc_start(r->pid, &state) == r->start && state != 'Z' && state != 'X';
}

/* Moves our QP in mirror slot i to PEER_GONE (its next WQE fails). */
static void gp_qp_gone(gpu_peer_part *g, int i)
{
	softnic_qp *qp = g->mirrored[i];

	if (qp && qp->gpu_peer)
		__atomic_store_n(&qp->s->link, SNX_QP_PEER_GONE, __ATOMIC_RELEASE);
}

static void gp_link_gone(gpu_peer_part *g, int peer)
{
	g->peers[peer].gone = 1;
	for (int i = 0; i < GP_MAX_QP; i++)
		if (g->mirrored[i] && g->mirrored[i]->gpu_peer == peer + 1)
			gp_qp_gone(g, i);
}

/* A peer that closes (or we close): our QPs to it go PEER_GONE and, once a
 * WQE the engine may still be running is done, we tell it that nothing here
 * touches its memory any more, so that it can free that memory. The
 * handles are closed only with unmap (at our close, the engine stopped):
 * cudaIpcCloseMemHandle waits for the device, which a running persistent
 * engine never lets go (measured: it hung the thread). */
static void gp_detach(gpu_peer_part *g, int peer, int unmap)
{
	gp_link *l = &g->peers[peer];

	gp_link_gone(g, peer);
	if (!l->detached) {
		usleep(1000); /* an engine pass lasts microseconds */
		l->detached = 1;
		__atomic_store_n(&l->host->detached[l->slot], 1, __ATOMIC_RELEASE);
	}
	if (!unmap || !l->page)
		return;
	for (uint32_t j = 0; j < l->nopened; j++)
		cudaIpcCloseMemHandle(l->opened[j]);
	cudaIpcCloseMemHandle(l->page);
	cudaGetLastError();
	l->nopened = 0;
	l->page = NULL;
}

/* Opens the peer's new allocations and brings the map up to date with its
 * table: delta first, then the key (release), as the engine reads them. */
static int gp_refresh(gpu_peer_part *g, int peer)
{
	gp_link *l = &g->peers[peer];
	char why[200];
	uint64_t version = 0;
	int rc = l->page ? gp_read_dir(g, l, &version) : EPIPE;

	if (rc)
		return rc;
	while (l->nopened < l->dir.nbuf && l->nopened < GP_MAX_BUF) {
		rc = softnic_ipc_open(g->device, &l->dir.bufs[l->nopened], &l->opened[l->nopened], why,
				      sizeof(why));
		if (rc) {
			softnic_set_error(g->nic, "gpu_peer: opening allocation %u of process %d: %s",
					  l->nopened, l->rec.pid, why);
			return rc;
		}
		l->nopened++;
	}
	rc = gp_copy(g, l->mrs, l->page->table.mrs, sizeof(l->mrs), "peer's MR table");
	if (rc)
		return rc;
	for (uint32_t s = 1; s < SNX_MAX_MR; s++) {
		uint32_t key = l->mrs[s].key, b = l->dir.mr_buf[s];
		snx_peer_map *m = &l->map[s];
		int64_t delta;

		if (!key || b >= l->nopened) {
			if (__atomic_load_n(&m->key, __ATOMIC_RELAXED))
				__atomic_store_n(&m->key, 0, __ATOMIC_RELEASE);
			continue;
		}
		delta = (int64_t)((uintptr_t)l->opened[b] - l->dir.bufs[b].base);
		if (__atomic_load_n(&m->key, __ATOMIC_RELAXED) == key && m->delta == delta)
			continue;
		__atomic_store_n(&m->key, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&m->delta, delta, __ATOMIC_RELAXED);
		/* Publishes delta before the key the engine checks first. */
		__atomic_store_n(&m->key, key, __ATOMIC_RELEASE);
	}
	l->version = version;
	/* Our QPs whose peer QP went (destroyed, or reconnected elsewhere). */
	for (int i = 0; i < GP_MAX_QP; i++) {
		int r = g->remote_slot[i];

		if (g->mirrored[i] && g->mirrored[i]->gpu_peer == peer + 1 && r >= 0 &&
		    (l->dir.qpn[r] != g->remote_qpn[i] || l->dir.peer_qpn[r] != g->dir.qpn[i]))
			gp_qp_gone(g, i);
	}
	return 0;
}

/* Writes our QP's mirror in slot i (what a peer's engine reads of it). */
static int gp_write_mirror(gpu_peer_part *g, int i, const softnic_qp *qp, uint32_t link)
{
	snx_qp m;

	memset(&m, 0, sizeof(m));
	m.qpn = qp->s->qpn;
	m.pd = qp->s->pd;
	m.flags = qp->s->flags;
	m.rights = __atomic_load_n(&qp->s->rights, __ATOMIC_RELAXED);
	m.in_error = __atomic_load_n(&qp->s->in_error, __ATOMIC_RELAXED);
	m.rnr_timer_ns = qp->s->rnr_timer_ns;
	m.link = link;
	g->shown_rights[i] = m.rights;
	g->shown_error[i] = m.in_error;
	return gp_copy(g, &g->page->qps[i], &m, sizeof(m), "QP mirror");
}

/* One pass of the thread: our mirrors' rights and error state, then each
 * peer's life and directory. Under the lock. */
static void gp_tick(gpu_peer_part *g)
{
	for (int i = 0; i < GP_MAX_QP; i++) {
		softnic_qp *qp = g->mirrored[i];

		if (qp && (__atomic_load_n(&qp->s->rights, __ATOMIC_RELAXED) != g->shown_rights[i] ||
			   __atomic_load_n(&qp->s->in_error, __ATOMIC_RELAXED) != g->shown_error[i]))
			gp_write_mirror(g, i, qp, SNX_QP_CONNECTED);
	}
	for (int p = 0; p < SOFTNIC_GPU_PEER_MAX; p++) {
		gp_link *l = &g->peers[p];
		uint64_t v;

		if (!l->used || l->gone)
			continue;
		if (!gp_alive(&l->rec)) {
			gp_link_gone(g, p); /* its memory stays open here until we close */
			continue;
		}
		if (__atomic_load_n(&l->host->closed, __ATOMIC_ACQUIRE)) {
			gp_detach(g, p, 0); /* the engine runs: the handles stay open */
			continue;
		}
		v = __atomic_load_n(&l->host->version, __ATOMIC_ACQUIRE);
		if (v != l->version && !(v & 1))
			gp_refresh(g, p);
	}
}

static void *gp_thread(void *arg)
{
	gpu_peer_part *g = (gpu_peer_part *)arg;

	cudaSetDevice(g->device);
	for (;;) {
		pthread_mutex_lock(&g->lock);
		if (g->stop) {
			pthread_mutex_unlock(&g->lock);
			return NULL;
		}
		gp_tick(g);
		pthread_mutex_unlock(&g->lock);
		usleep(GP_TICK_US);
	}
}

/* ------------------------------------------------------------------ */
/* Object hooks (softnic_internal.h). */

/* Exports the allocation holding a new MR's range and mirrors its slot;
 * memory that cannot be exported stays local (peers get BAD_RKEY). */
static void gp_mr_added(softnic *nic, softnic_mr *mr, void *addr, size_t len)
{
	gpu_peer_part *g = nic->gpu_peer;
	char why[200];
	shm_gpu_buf b;
	snx_mr m;
	uint32_t j;

	if (softnic_ipc_describe(addr, len, &b, why, sizeof(why)))
		return; /* host, managed or pool memory: local use only */
	pthread_mutex_lock(&g->lock);
	for (j = 0; j < g->dir.nbuf && g->dir.bufs[j].base != b.base; j++)
		;
	if (j == GP_MAX_BUF) {
		fprintf(stderr, "softnic (GPU peers): MR 0x%x not exported: %d allocations are "
			"exported already\n", mr->key, GP_MAX_BUF);
		pthread_mutex_unlock(&g->lock);
		return;
	}
	if (j == g->dir.nbuf)
		g->dir.bufs[g->dir.nbuf++] = b;
	g->dir.mr_buf[mr->slot] = (uint8_t)j;
	m = nic->shared->mrs[mr->slot];
	m.key = 0;
	/* The fields with the key clear, then the key (as the MR table's own
	 * registration publishes a slot), then the directory. */
	if (!gp_copy(g, &g->page->table.mrs[mr->slot], &m, sizeof(m), "MR mirror") &&
	    !gp_copy(g, &g->page->table.mrs[mr->slot].key, &mr->key, sizeof(mr->key), "MR mirror") &&
	    !gp_publish_dir(g))
		g->exported[mr->slot] = 1;
	pthread_mutex_unlock(&g->lock);
}

static void gp_mr_gone(softnic *nic, softnic_mr *mr)
{
	gpu_peer_part *g = nic->gpu_peer;
	uint32_t zero = 0;

	pthread_mutex_lock(&g->lock);
	if (g->exported[mr->slot]) {
		/* The key first, then the epoch: a peer's engine that sees the
		 * new epoch drops its MR caches and then finds the key gone. */
		gp_copy(g, &g->page->table.mrs[mr->slot].key, &zero, sizeof(zero), "MR mirror");
		g->mr_epoch++;
		gp_copy(g, &g->page->table.mr_epoch, &g->mr_epoch, sizeof(g->mr_epoch), "MR epoch");
		gp_publish_dir(g);
		g->exported[mr->slot] = 0;
	}
	pthread_mutex_unlock(&g->lock);
}

static void gp_qp_destroyed(softnic *nic, softnic_qp *qp)
{
	gpu_peer_part *g = nic->gpu_peer;
	int i = qp->mirror - 1;

	pthread_mutex_lock(&g->lock);
	if (i >= 0 && g->mirrored[i] == qp) {
		gp_write_mirror(g, i, qp, SNX_QP_PEER_GONE);
		g->dir.qpn[i] = g->dir.peer_qpn[i] = 0;
		gp_publish_dir(g);
		g->mirrored[i] = NULL;
		g->remote_slot[i] = -1;
	}
	qp->mirror = 0;
	pthread_mutex_unlock(&g->lock);
}

/* 1 while some importer of our page has not closed its handles of it. */
static int gp_importers_attached(const gpu_peer_part *g)
{
	for (int i = 0; i < SOFTNIC_GPU_PEER_MAX; i++) {
		int32_t pid = __atomic_load_n(&g->host->importer[i], __ATOMIC_ACQUIRE);

		if (pid && !__atomic_load_n(&g->host->detached[i], __ATOMIC_ACQUIRE) &&
		    !(kill(pid, 0) && errno == ESRCH))
			return 1;
	}
	return 0;
}

/* At close, once the engine stopped: the thread ends, we let go of the
 * peers' memory, mark ourselves closed and wait (1 s at most) until our
 * importers let go of ours, so that freeing it faults nobody. */
static void gp_stop(softnic *nic)
{
	gpu_peer_part *g = nic->gpu_peer;
	uint64_t end;

	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_mutex_unlock(&g->lock);
	if (g->thread_on)
		pthread_join(g->thread, NULL);
	g->thread_on = 0;
	pthread_mutex_lock(&g->lock);
	for (int p = 0; p < SOFTNIC_GPU_PEER_MAX; p++)
		if (g->peers[p].used)
			gp_detach(g, p, 1);
	__atomic_store_n(&g->host->closed, 1, __ATOMIC_RELEASE);
	end = gic_now_ns() + 1000000000ull;
	while (gp_importers_attached(g) && gic_now_ns() < end)
		usleep(200);
	if (gp_importers_attached(g))
		fprintf(stderr, "softnic (GPU peers): a peer process still maps this softnic's memory "
			"after 1 s; freeing it anyway\n");
	pthread_mutex_unlock(&g->lock);
}

static void gp_free(gpu_peer_part *g)
{
	softnic *nic = g->nic;

	cudaSetDevice(g->device);
	for (int p = 0; p < SOFTNIC_GPU_PEER_MAX; p++) {
		gp_link *l = &g->peers[p];

		for (uint32_t j = 0; j < l->nopened; j++)
			cudaIpcCloseMemHandle(l->opened[j]);
		if (l->page)
			cudaIpcCloseMemHandle(l->page);
		if (l->map)
			nic->backend.state_free(l->map, nic->backend.ctx);
		if (l->host)
			munmap(l->host, sizeof(gp_host));
	}
	if (g->page)
		cudaFree(g->page);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	cudaGetLastError();
	if (g->host) {
		munmap(g->host, sizeof(gp_host));
		shm_unlink(g->host_name);
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static void gp_release(softnic *nic)
{
	gp_free(nic->gpu_peer);
	nic->gpu_peer = NULL;
	nic->peer_hooks = NULL;
}

static const softnic_peer_hooks gp_hooks = {
	gp_mr_added, gp_mr_gone, gp_qp_destroyed, gp_stop, gp_release,
};

/* ------------------------------------------------------------------ */
/* The interface. */

/* Maps a host file of gp_host size (created: exclusive). NULL with errno. */
static gp_host *gp_host_map(const char *name, int create)
{
	int fd = shm_open(name, create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
	void *p;

	if (fd < 0)
		return NULL;
	if (create && ftruncate(fd, sizeof(gp_host))) {
		close(fd);
		shm_unlink(name);
		return NULL;
	}
	p = mmap(NULL, sizeof(gp_host), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		if (create)
			shm_unlink(name);
		return NULL;
	}
	return (gp_host *)p;
}

/* Removes host files of this user's processes that are gone (a process
 * killed before its close leaves its file behind). */
static void gp_reclaim_files(void)
{
	char prefix[48];
	struct dirent *d;
	DIR *dir = opendir("/dev/shm");

	snprintf(prefix, sizeof(prefix), "gic-gpu-peer.%u.", (unsigned)getuid());
	while (dir && (d = readdir(dir))) {
		char name[300];
		int pid;

		if (strncmp(d->d_name, prefix, strlen(prefix)) ||
		    sscanf(d->d_name + strlen(prefix), "%d.", &pid) != 1 || pid <= 0 ||
		    !(kill(pid, 0) && errno == ESRCH))
			continue;
		snprintf(name, sizeof(name), "/%s", d->d_name);
		shm_unlink(name);
	}
	if (dir)
		closedir(dir);
}

/* Our page, its IPC description, our host file and the record. */
static int gp_make_page(gpu_peer_part *g, gp_rec *r)
{
	static int files; /* this process's softnics with GPU peers */
	char why[200], state = '?';
	cudaError_t e;
	int rc;

	gp_reclaim_files();
	snprintf(g->host_name, sizeof(g->host_name), "/gic-gpu-peer.%u.%d.%d", (unsigned)getuid(),
		 (int)getpid(), __atomic_fetch_add(&files, 1, __ATOMIC_RELAXED));
	g->host = gp_host_map(g->host_name, 1);
	if (!g->host) {
		softnic_set_error(g->nic, "gpu_peer_enable: the host file %s: %s", g->host_name,
				  strerror(errno));
		return errno ? errno : EIO;
	}
	e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&g->page, sizeof(gp_page));
	if (e == cudaSuccess)
		e = cudaMemsetAsync(g->page, 0, sizeof(gp_page), g->stream);
	if (e != cudaSuccess) {
		softnic_set_error(g->nic, "gpu_peer_enable: the export page: %s", cudaGetErrorString(e));
		cudaGetLastError();
		return e == cudaErrorMemoryAllocation ? ENOMEM : EIO;
	}
	rc = gp_wait(g, "clearing the export page");
	if (!rc && (rc = softnic_ipc_describe(g->page, sizeof(gp_page), &r->page, why, sizeof(why))))
		softnic_set_error(g->nic, "gpu_peer_enable: exporting the page: %s", why);
	r->magic = GP_MAGIC;
	r->size = sizeof(*r);
	r->pid = getpid();
	r->device = g->device;
	r->start = softnic_proc_start(r->pid, &state);
	snprintf(r->host_name, sizeof(r->host_name), "%s", g->host_name);
	return rc;
}

int softnic_gpu_peer_enable(softnic *nic, softnic_gpu_peer_rec *rec)
{
	gpu_peer_part *g;
	gp_rec r;
	int rc, dev = softnic_gpu_engine_device(nic);

	if (!nic || !rec || dev < 0 || nic->gpu_peer) {
		if (nic)
			softnic_set_error(nic, "gpu_peer_enable: %s", !rec ? "no record" : dev < 0 ?
					  "not a GPU-engine softnic (softnic_open_gpu)" :
					  "enabled already");
		return EINVAL;
	}
	if (nic->pds.next != &nic->pds) {
		softnic_set_error(nic, "gpu_peer_enable: a PD exists already (enable first, so that "
				  "PD numbers are unique on the host)");
		return EBUSY;
	}
	g = (gpu_peer_part *)calloc(1, sizeof(*g));
	if (!g)
		return ENOMEM;
	g->nic = nic;
	g->device = dev;
	pthread_mutex_init(&g->lock, NULL);
	for (int i = 0; i < GP_MAX_QP; i++)
		g->remote_slot[i] = -1;
	memset(&r, 0, sizeof(r));
	cudaSetDevice(dev);
	rc = gp_make_page(g, &r);
	if (!rc && pthread_create(&g->thread, NULL, gp_thread, g)) {
		softnic_set_error(nic, "gpu_peer_enable: no thread");
		rc = EAGAIN;
	}
	if (rc) {
		gp_free(g);
		return rc;
	}
	g->thread_on = 1;
	pthread_mutex_lock(&nic->lock);
	nic->next_pd = ((uint32_t)r.pid << GP_PD_SHIFT) | 1;
	nic->gpu_peer = g;
	nic->peer_hooks = &gp_hooks;
	pthread_mutex_unlock(&nic->lock);
	memset(rec, 0, sizeof(*rec));
	memcpy(rec->bytes, &r, sizeof(r));
	return 0;
}

/* Undoes a peer's add (the engine has no QP connected to it yet): its
 * handles, map, host file and importer slot. Under the lock. */
static void gp_link_drop(gpu_peer_part *g, gp_link *l)
{
	for (uint32_t j = 0; j < l->nopened; j++)
		cudaIpcCloseMemHandle(l->opened[j]);
	if (l->page)
		cudaIpcCloseMemHandle(l->page);
	cudaGetLastError();
	if (l->map)
		g->nic->backend.state_free(l->map, g->nic->backend.ctx);
	if (l->host) {
		if (l->slot >= 0)
			__atomic_store_n(&l->host->importer[l->slot], 0, __ATOMIC_RELEASE);
		munmap(l->host, sizeof(gp_host));
	}
	memset(l, 0, sizeof(*l));
}

/* Maps the peer's host file and takes an importer slot there. */
static int gp_attach_host(gpu_peer_part *g, gp_link *l)
{
	l->rec.host_name[sizeof(l->rec.host_name) - 1] = 0;
	l->host = gp_host_map(l->rec.host_name, 0);
	if (!l->host) {
		softnic_set_error(g->nic, "gpu_peer_add: the host file %s of process %d: %s",
				  l->rec.host_name, l->rec.pid, strerror(errno));
		return errno == ENOENT ? EPIPE : errno ? errno : EIO;
	}
	for (int i = 0; i < SOFTNIC_GPU_PEER_MAX; i++) {
		int32_t free_slot = 0;

		if (__atomic_compare_exchange_n(&l->host->importer[i], &free_slot, (int32_t)getpid(), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&l->host->detached[i], 0, __ATOMIC_RELEASE);
			l->slot = i;
			return 0;
		}
	}
	softnic_set_error(g->nic, "gpu_peer_add: process %d has %d importers already", l->rec.pid,
			  SOFTNIC_GPU_PEER_MAX);
	return ENOSPC;
}

int softnic_gpu_peer_add(softnic *nic, const softnic_gpu_peer_rec *rec, int *peer)
{
	gpu_peer_part *g = nic ? nic->gpu_peer : NULL;
	char why[200];
	gp_link *l = NULL;
	gp_rec r;
	int p, rc;

	if (!g || !rec || !peer) {
		if (nic)
			softnic_set_error(nic, "gpu_peer_add: %s", !g ? "softnic_gpu_peer_enable was "
					  "not called" : "bad argument");
		return EINVAL;
	}
	memcpy(&r, rec->bytes, sizeof(r));
	if (r.magic != GP_MAGIC || r.size != sizeof(r) || r.pid == getpid()) {
		softnic_set_error(nic, "gpu_peer_add: %s", r.pid == getpid() && r.magic == GP_MAGIC ?
				  "the record is this process's (connect QPs of one process with "
				  "softnic_qp_connect)" : "not a GPU peer record of this version");
		return EINVAL;
	}
	pthread_mutex_lock(&g->lock);
	for (p = 0; p < SOFTNIC_GPU_PEER_MAX && g->peers[p].used; p++)
		;
	if (p == SOFTNIC_GPU_PEER_MAX) {
		softnic_set_error(nic, "gpu_peer_add: %d peers already", SOFTNIC_GPU_PEER_MAX);
		pthread_mutex_unlock(&g->lock);
		return ENOSPC;
	}
	l = &g->peers[p];
	memset(l, 0, sizeof(*l));
	l->slot = -1;
	l->rec = r;
	rc = gp_attach_host(g, l);
	if (!rc && (rc = softnic_ipc_open(g->device, &r.page, (void **)&l->page, why, sizeof(why))))
		softnic_set_error(nic, "gpu_peer_add: the page of process %d: %s", r.pid, why);
	if (!rc) {
		l->map = (snx_peer_map *)nic->backend.state_alloc(sizeof(snx_peer_map) * SNX_MAX_MR,
								  nic->backend.ctx);
		rc = l->map ? 0 : ENOMEM;
	}
	if (!rc) {
		l->used = 1;
		rc = gp_refresh(g, p);
	}
	if (rc) /* nothing of a peer that could not be added stays */
		gp_link_drop(g, l);
	pthread_mutex_unlock(&g->lock);
	if (!rc)
		*peer = p;
	return rc;
}

/* Our QP's mirror in a free slot. Under the lock. -1 when none is free. */
static int gp_publish_qp(gpu_peer_part *g, softnic_qp *qp, uint32_t remote_qpn)
{
	int i;

	for (i = 0; i < GP_MAX_QP && g->mirrored[i]; i++)
		;
	if (i == GP_MAX_QP || gp_write_mirror(g, i, qp, SNX_QP_CONNECTED))
		return -1;
	g->dir.qpn[i] = qp->s->qpn;
	g->dir.peer_qpn[i] = remote_qpn;
	if (gp_publish_dir(g))
		return -1;
	g->mirrored[i] = qp;
	g->remote_qpn[i] = remote_qpn;
	qp->mirror = i + 1;
	return i;
}

/* The peer's mirror slot of remote_qpn once it names qpn. Under the lock. */
static int gp_find_remote(gpu_peer_part *g, gp_link *l, uint32_t remote_qpn, uint32_t qpn)
{
	uint64_t version;

	if (!l->page || gp_read_dir(g, l, &version))
		return -1;
	for (int j = 0; j < GP_MAX_QP; j++)
		if (l->dir.qpn[j] == remote_qpn && l->dir.peer_qpn[j] == qpn)
			return j;
	return -1;
}

int softnic_gpu_peer_connect(softnic_qp *qp, int peer, uint32_t remote_qpn)
{
	softnic *nic = qp ? qp->nic : NULL;
	gpu_peer_part *g = nic ? nic->gpu_peer : NULL;
	uint64_t end = gic_now_ns() + GP_CONNECT_NS;
	gp_link *l;
	int i, j = -1;

	if (!g || peer < 0 || peer >= SOFTNIC_GPU_PEER_MAX || !g->peers[peer].used ||
	    (qp->s->flags & (SOFTNIC_QP_DCI | SOFTNIC_QP_DCT))) {
		if (nic)
			softnic_set_error(nic, "gpu_peer_connect: %s", !g ? "softnic_gpu_peer_enable "
					  "was not called" : "no such peer, or a DC QP");
		return EINVAL;
	}
	if (qp->peer || qp->wire || qp->gpu_peer || qp->mirror ||
	    __atomic_load_n(&qp->s->link, __ATOMIC_ACQUIRE)) {
		softnic_set_error(nic, "gpu_peer_connect: QP 0x%x is already connected", qp->s->qpn);
		return EISCONN;
	}
	l = &g->peers[peer];
	pthread_mutex_lock(&g->lock);
	i = gp_publish_qp(g, qp, remote_qpn);
	while (i >= 0 && !l->gone && (j = gp_find_remote(g, l, remote_qpn, qp->s->qpn)) < 0 &&
	       gic_now_ns() < end) {
		pthread_mutex_unlock(&g->lock);
		usleep(200);
		pthread_mutex_lock(&g->lock);
	}
	if (i >= 0 && j >= 0 && !l->gone) {
		/* The mirrors are the peer (its QP and MR table, mapped here). */
		qp->s->peer = &l->page->qps[j];
		qp->s->peer_sh = &l->page->table;
		qp->s->peer_map = l->map;
		qp->gpu_peer = peer + 1;
		g->remote_slot[i] = j;
		/* Publishes the pointers above before the link the engine checks. */
		__atomic_store_n(&qp->s->link, SNX_QP_CONNECTED, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&g->lock);
		return 0;
	}
	pthread_mutex_unlock(&g->lock);
	softnic_set_error(nic, "gpu_peer_connect: QP 0x%x: %s", qp->s->qpn, i < 0 ?
			  "no mirror slot (or the copy failed)" : l->gone ? "the peer is gone" :
			  "the peer's QP never connected to this one within 10 s");
	if (i >= 0)
		gp_qp_destroyed(nic, qp); /* takes the mirror back */
	return i < 0 ? ENOSPC : l->gone ? EPIPE : ETIMEDOUT;
}

int softnic_gpu_peer_sync(softnic *nic)
{
	gpu_peer_part *g = nic ? nic->gpu_peer : NULL;
	int rc = 0;

	if (!g)
		return EINVAL;
	pthread_mutex_lock(&g->lock);
	for (int p = 0; p < SOFTNIC_GPU_PEER_MAX && !rc; p++)
		if (g->peers[p].used && !g->peers[p].gone)
			rc = gp_refresh(g, p);
	pthread_mutex_unlock(&g->lock);
	return rc;
}
