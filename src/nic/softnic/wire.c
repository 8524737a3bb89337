/*
 * softnic's wire (gic/softnic_wire.h): RC connections between processes
 * of one host whose buffers are private memory.
 *
 * Host-wide QP numbers: a process claims block b (1..4095) by creating
 * /dev/shm/gic-wire.<uid>.blk.<b> with its pid; its QPs are numbered
 * b << 12 | i, so a QP number names its process.
 *
 * A connection is one file, /dev/shm/gic-wire.<uid>.conn.<lo>.<hi> (the
 * two QP numbers), opened by both sides at their RTR: two sides (pid,
 * attached, detached, requests published), a slot ring per direction, and
 * a payload ring per direction. Who does what:
 *   - the requester's engine (softnic_wire_progress, under the QP's engine
 *     lock) decodes each announced WQE, checks its local keys, copies its
 *     payload into the ring (writes, sends), fills a slot and publishes
 *     it; later, in order, it takes each answer, lands read data and
 *     atomic results in the local scatter list, and writes the CQE;
 *   - the responder's wire thread turns each request into a WQE of the
 *     mirror QP, a private QP of the responder's softnic connected to the
 *     responder QP, whose local segment points into the ring; the engine
 *     executes it like any other WQE (rkey in the responder's MR table,
 *     the responder QP's rights, its receive queue, RNR, its CQEs); the
 *     mirror's CQE becomes the slot's answer;
 *   - the wire thread also watches the peer: a process that ends, or a
 *     QP destroyed, fails what is in flight (transport retry error), and
 *     an idle QP goes to error so that its receives flush.
 * Memory is only ever touched by the process that owns it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gic/post.h"
#include "gic/softnic_wire.h"
#include "softnic_internal.h"
#include "engine_core.h"
#include "wire.h"

enum {
	WIRE_SLOTS = 256,          /* requests in flight per direction */
	WIRE_MIRROR_DEPTH = 128,   /* requests handed to the mirror at once (<= 2 BBs each) */
	WIRE_MIRROR_LOG_BB = 9,
	WIRE_MIRROR_LOG_CQE = 8,
	WIRE_QPN_SHIFT = 12,       /* QPN = block << 12 | index */
	WIRE_BLOCKS = 4095,
	WIRE_ALIGN = 64,           /* payload allocations */
	WIRE_IDLE_SPINS = 2000,    /* idle service rounds before the thread naps */
	WIRE_NAME_LEN = 96,
};
#define WIRE_DEFAULT_RING ((size_t)8 << 20)
#define WIRE_MIN_RING ((size_t)64 << 10)
#define WIRE_MAX_RING ((size_t)1 << 30)
#define WIRE_CHECK_NS 10000000ull       /* peer liveness check period */
#define WIRE_ATTACH_NS 10000000000ull   /* a request waits this long for its responder */
#define WIRE_NAP_NS 20000L
#define WIRE_LAST_ANSWERS_NS 200000000ull /* answers owed when a QP is destroyed */

/* One request and its answer. The requester writes the fields above the
 * answer, then publishes the slot by its side's head (release); the
 * responder writes the answer, then done (release). */
typedef struct wire_slot {
	uint64_t raddr;
	uint64_t data_off;     /* payload (or the landing area of a read) in the ring */
	uint64_t atomic_add, atomic_cmp, atomic_swap_mask, atomic_cmp_mask;
	uint32_t rkey;
	uint32_t len;
	uint32_t imm;          /* as in the WQE (big-endian) */
	uint8_t opcode, fm_ce_se, atomic_size, rnr_retry;
	/* The answer. */
	uint64_t result;       /* an atomic's old value, as the NIC returns it */
	uint8_t syndrome, vendor_syndrome, pad[6];
	uint64_t done;         /* seq + 1 once answered */
} wire_slot;

typedef struct wire_side {
	int32_t pid;
	uint32_t qpn;
	uint64_t start_time;   /* the process's start (/proc): tells a reused pid */
	uint32_t attached;     /* release-stored after the fields above */
	uint32_t detached;     /* its QP was destroyed */
	uint64_t head;         /* requests this side published */
	uint8_t pad[32];
} wire_side;

typedef struct wire_file {
	wire_side side[2];     /* side 0: the lower QP number */
	wire_slot slots[2][WIRE_SLOTS]; /* requests from side s */
} wire_file;

#define WIRE_DATA_OFF (((sizeof(wire_file)) + 4095) & ~(size_t)4095)

/* One wire connection of a local QP. */
struct wire_conn {
	struct wire_conn *next;   /* on the softnic's list (wire lock) */
	softnic_qp *qp;
	wire_file *f;
	size_t map_bytes, ring;
	uint8_t *data[2];         /* payload ring of requests from side s */
	int side;
	uint32_t peer_qpn;
	char name[WIRE_NAME_LEN];
	uint32_t gone;            /* release-stored: the peer vanished */
	/* Requester: the QP's engine, under its lock. */
	uint64_t tx_seq, tx_done; /* requests published, completed */
	uint64_t issue_bb;        /* BB position of the next WQE to put on the wire */
	uint64_t dhead, dtail;    /* payload bytes allocated, freed */
	uint64_t span[WIRE_SLOTS]; /* payload bytes each slot holds (a wrap's skip included) */
	uint32_t nbb[WIRE_SLOTS];
	int fail_set;             /* the WQE at fail_bb failed before it left */
	uint64_t fail_bb;
	uint32_t fail_nbb;
	uint8_t fail_synd, fail_vs, fail_opcode;
	/* Responder: the wire thread. */
	softnic_cq *mcq;
	softnic_qp *mirror;
	softnic_mr *mr;           /* the whole file, in the responder QP's PD */
	gic_sq msq;
	gic_cq mcqv;
	uint64_t rx_posted, rx_answered;
	int mirror_rnr;
	uint64_t connect_ns, next_check_ns;
	int attached;             /* this side's record is ours (conn_attach) */
};

struct softnic_wire {
	softnic *nic;
	int block;
	char block_name[WIRE_NAME_LEN];
	size_t ring;
	pthread_mutex_t lock;     /* conns; the thread's service round */
	wire_conn *conns;
	pthread_t thread;
	int running;
	uint32_t stop;
};

/* 1 once the peer vanished (release-stored by conn_set_gone). */
static int conn_gone(const wire_conn *c)
{
	return (int)__atomic_load_n(&c->gone, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------ */
/* Processes and names. */

uint64_t softnic_proc_start(int pid, char *state)
{
	char path[64], buf[1024];
	const char *p;
	unsigned long long v = 0;
	FILE *f;
	size_t n;

	*state = '?';
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p || p[1] != ' ')
		return 0;
	*state = p[2];
	p += 3;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		sscanf(p, "%llu", &v);
	return v;
}

/* 1 while process pid (started at start, when known) lives. */
static int pid_alive(int pid, uint64_t start)
{
	char state;
	uint64_t now_start;

	if (pid <= 0)
		return 0;
	if (kill(pid, 0) && errno == ESRCH)
		return 0;
	now_start = softnic_proc_start(pid, &state);
	if (state == 'Z' || state == 'X')
		return 0;
	return !(start && now_start && now_start != start);
}

static void block_name(char *out, int block)
{
	snprintf(out, WIRE_NAME_LEN, "/dev/shm/gic-wire.%u.blk.%d", (unsigned)getuid(), block);
}

static void conn_name(char *out, uint32_t a, uint32_t b)
{
	uint32_t lo = a < b ? a : b, hi = a < b ? b : a;

	snprintf(out, WIRE_NAME_LEN, "/dev/shm/gic-wire.%u.conn.%x.%x", (unsigned)getuid(), lo, hi);
}

/* Reads the owner of a block file; 0 when it names a live process (or is
 * being written), ENOENT when none or a dead one owns it. */
static int block_owner(const char *name, int *pid, uint64_t *start)
{
	char buf[64] = { 0 };
	unsigned long long s = 0;
	int fd = open(name, O_RDONLY), n;

	*pid = 0;
	if (fd < 0)
		return ENOENT;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || sscanf(buf, "%d %llu", pid, &s) != 2)
		return 0; /* its creator is writing it */
	*start = s;
	return pid_alive(*pid, *start) ? 0 : ENOENT;
}

/* Removes the connection files of a dead process's block. */
static void sweep_block(int block)
{
	char prefix[WIRE_NAME_LEN], path[WIRE_NAME_LEN + 256];
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = snprintf(prefix, sizeof(prefix), "gic-wire.%u.conn.", (unsigned)getuid());

	while (d && (e = readdir(d))) {
		unsigned lo, hi;

		if (strncmp(e->d_name, prefix, (size_t)n) ||
		    sscanf(e->d_name + n, "%x.%x", &lo, &hi) != 2)
			continue;
		if ((int)(lo >> WIRE_QPN_SHIFT) == block || (int)(hi >> WIRE_QPN_SHIFT) == block) {
			snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
}

/* Claims a free block (or one whose process died) for this process. */
static int claim_block(softnic_wire *wn)
{
	char state, line[64];
	uint64_t start = softnic_proc_start(getpid(), &state);

	for (int i = 0; i < 2 * WIRE_BLOCKS; i++) {
		int b = 1 + (int)(((unsigned)getpid() + (unsigned)i / 2) % WIRE_BLOCKS), pid, fd;
		uint64_t s;

		block_name(wn->block_name, b);
		fd = open(wn->block_name, O_CREAT | O_EXCL | O_WRONLY, 0600);
		if (fd >= 0) {
			int n = snprintf(line, sizeof(line), "%d %llu\n", (int)getpid(),
					 (unsigned long long)start);
			int ok = write(fd, line, (size_t)n) == n;

			close(fd);
			if (!ok) {
				unlink(wn->block_name);
				return EIO;
			}
			wn->block = b;
			return 0;
		}
		if (errno != EEXIST)
			return errno;
		if (i % 2 == 0 && block_owner(wn->block_name, &pid, &s) == ENOENT && pid) {
			sweep_block(b); /* a dead process's: reclaimed, then retried */
			unlink(wn->block_name);
		} else {
			i |= 1; /* a live owner: the next block */
		}
	}
	return ENOSPC;
}

/* ------------------------------------------------------------------ */
/* Enabling, QP numbers. */

static void *wire_main(void *arg);

int softnic_wire_enable(softnic *nic, size_t ring_bytes)
{
	softnic_wire *wn;
	int rc;

	if (!nic || (ring_bytes && (ring_bytes % 4096 || ring_bytes < WIRE_MIN_RING ||
				    ring_bytes > WIRE_MAX_RING)))
		return EINVAL;
	if (nic->wire)
		return EEXIST;
	if (nic->backend.state_alloc || nic->shm) {
		softnic_set_error(nic, "wire_enable: only a process-local softnic on the CPU engine "
				  "has a wire");
		return EOPNOTSUPP;
	}
	wn = calloc(1, sizeof(*wn));
	if (!wn)
		return ENOMEM;
	wn->nic = nic;
	wn->ring = ring_bytes ? ring_bytes : WIRE_DEFAULT_RING;
	rc = claim_block(wn);
	if (rc) {
		softnic_set_error(nic, "wire_enable: no QP-number block in /dev/shm: %s", strerror(rc));
		free(wn);
		return rc;
	}
	pthread_mutex_init(&wn->lock, NULL);
	pthread_mutex_lock(&nic->lock);
	nic->qpn_base = (uint32_t)wn->block << WIRE_QPN_SHIFT;
	nic->qpn_span = 1u << WIRE_QPN_SHIFT;
	__atomic_store_n(&nic->wire, wn, __ATOMIC_RELEASE); /* engine 0 looks at every pass */
	pthread_mutex_unlock(&nic->lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The connection file. */

/* Opens (creating when first) the connection file of qp and remote. */
static int conn_map(wire_conn *c, size_t ring)
{
	size_t want = WIRE_DATA_OFF + 2 * ring;
	struct stat st;
	void *m;
	int fd = open(c->name, O_CREAT | O_EXCL | O_RDWR, 0600), rc = 0;

	if (fd >= 0) {
		/* Reserved now: a full /dev/shm fails here, not with SIGBUS later. */
		rc = posix_fallocate(fd, 0, (off_t)want);
		if (rc)
			unlink(c->name); /* the peer must not find a short file */
	} else if (errno == EEXIST) {
		fd = open(c->name, O_RDWR);
		/* The creator sizes it at once; a short wait covers the gap. */
		for (int i = 0; fd >= 0 && i < 1000; i++) {
			if (fstat(fd, &st) || st.st_size)
				break;
			usleep(1000);
		}
		if (fd >= 0 && !fstat(fd, &st) && (size_t)st.st_size > WIRE_DATA_OFF)
			want = (size_t)st.st_size;
		else if (fd >= 0)
			rc = EPROTO;
	}
	if (fd < 0)
		return errno;
	if (rc) {
		close(fd);
		return rc;
	}
	m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return errno;
	c->f = m;
	c->map_bytes = want;
	c->ring = (want - WIRE_DATA_OFF) / 2;
	c->data[0] = (uint8_t *)m + WIRE_DATA_OFF;
	c->data[1] = c->data[0] + c->ring;
	return 0;
}

/* The mirror: a QP of this softnic, connected to qp, whose WQEs are the
 * peer's requests; its CQ gives their answers. */
static int mirror_make(wire_conn *c)
{
	softnic_qp_attr a = { 0 };
	softnic_qp *qp = c->qp;

	c->mcq = softnic_cq_create(qp->nic, WIRE_MIRROR_LOG_CQE);
	if (!c->mcq)
		return errno ? errno : ENOMEM;
	a.log_sq_bb = WIRE_MIRROR_LOG_BB;
	a.send_cq = c->mcq;
	a.rnr_retry = 7;
	c->mirror_rnr = 7;
	c->mirror = softnic_qp_create(qp->pd, &a);
	if (!c->mirror)
		return errno ? errno : ENOMEM;
	c->mr = softnic_reg_mr(qp->pd, c->f, c->map_bytes, SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return errno ? errno : ENOMEM;
	softnic_qp_view(c->mirror, &c->msq, &c->mcqv);
	return softnic_qp_connect(c->mirror, qp);
}

static int conn_serve(wire_conn *c);

/* Before a connection goes: answers what the mirror has been given (so
 * that a requester whose message this side's application has already
 * seen never takes it for lost), for at most WIRE_LAST_ANSWERS_NS. */
static void conn_last_answers(wire_conn *c)
{
	uint64_t end = gic_now_ns() + WIRE_LAST_ANSWERS_NS;

	while (c->mirror && !conn_gone(c) && c->rx_answered < c->rx_posted && gic_now_ns() < end) {
		if (!conn_serve(c))
			sched_yield();
	}
}

static void conn_free(wire_conn *c)
{
	conn_last_answers(c);
	if (c->mirror)
		softnic_qp_destroy(c->mirror);
	if (c->mr)
		softnic_dereg_mr(c->mr);
	if (c->mcq)
		softnic_cq_destroy(c->mcq);
	if (c->f && c->attached) {
		__atomic_store_n(&c->f->side[c->side].detached, 1, __ATOMIC_RELEASE);
		unlink(c->name); /* the peer keeps its mapping */
	}
	if (c->f)
		munmap(c->f, c->map_bytes); /* a file in use by others is left alone */
	free(c);
}

/* Checks that a live process owns remote's block; ENOENT with the reason. */
static int remote_owner(softnic *nic, uint32_t remote)
{
	char name[WIRE_NAME_LEN];
	uint64_t start;
	int pid;

	block_name(name, (int)(remote >> WIRE_QPN_SHIFT));
	if (remote >> WIRE_QPN_SHIFT == 0 || remote >> WIRE_QPN_SHIFT > WIRE_BLOCKS ||
	    block_owner(name, &pid, &start) || !pid) {
		softnic_set_error(nic, "qp_connect_wire: no live process on this host owns QP 0x%x "
				  "(%s)", remote, name);
		return ENOENT;
	}
	return 0;
}

/* Fills this side's record and the connection's bookkeeping. */
static int conn_attach(wire_conn *c, uint32_t remote)
{
	wire_side *me;
	char state;

	c->side = c->qp->s->qpn < remote ? 0 : 1;
	me = &c->f->side[c->side];
	if (__atomic_load_n(&me->attached, __ATOMIC_ACQUIRE)) {
		softnic_set_error(c->qp->nic, "qp_connect_wire: %s is in use by another QP 0x%x",
				  c->name, me->qpn);
		return EEXIST;
	}
	me->pid = (int32_t)getpid();
	me->qpn = c->qp->s->qpn;
	me->start_time = softnic_proc_start(getpid(), &state);
	__atomic_store_n(&me->attached, 1, __ATOMIC_RELEASE);
	c->attached = 1;
	c->peer_qpn = remote;
	c->connect_ns = gic_now_ns();
	c->issue_bb = c->qp->s->cons;
	return 0;
}

static int wire_thread_start(softnic_wire *wn)
{
	int rc;

	if (wn->running || wn->nic->attr.engine_threads > 0)
		return 0; /* engine 0 serves the wire */
	rc = pthread_create(&wn->thread, NULL, wire_main, wn);
	if (!rc)
		wn->running = 1;
	return rc;
}

int softnic_qp_connect_wire(softnic_qp *qp, uint32_t remote_qpn)
{
	softnic_wire *wn;
	wire_conn *c;
	engine *e;
	int rc;

	if (!qp || remote_qpn == qp->s->qpn || remote_qpn > 0xffffff)
		return EINVAL;
	wn = qp->nic->wire;
	if (!wn) {
		softnic_set_error(qp->nic, "qp_connect_wire: softnic_wire_enable() was not called");
		return EOPNOTSUPP;
	}
	if (qp->s->flags & (SOFTNIC_QP_DCI | SOFTNIC_QP_DCT)) {
		softnic_set_error(qp->nic, "qp_connect_wire: QP 0x%x is a DCI or DCT: DC QPs are "
				  "never connected (DC over the wire is not modelled)", qp->s->qpn);
		return EINVAL;
	}
	if (qp->peer || qp->wire || qp->s->link)
		return EISCONN;
	rc = remote_owner(qp->nic, remote_qpn);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ENOMEM;
	c->qp = qp;
	conn_name(c->name, qp->s->qpn, remote_qpn);
	rc = conn_map(c, wn->ring);
	if (!rc)
		rc = conn_attach(c, remote_qpn);
	/* qp->wire before the mirror connects to qp: the engine never runs
	 * qp's WQEs against the mirror, not even for one pass. */
	e = &qp->nic->engines[qp->engine];
	engine_lock_mgmt(e); /* the engine reads qp->wire under this lock */
	qp->wire = rc ? NULL : c;
	engine_unlock_mgmt(e);
	if (!rc)
		rc = mirror_make(c);
	pthread_mutex_lock(&wn->lock);
	if (!rc)
		rc = wire_thread_start(wn);
	if (!rc) {
		c->next = wn->conns;
		wn->conns = c;
	}
	pthread_mutex_unlock(&wn->lock);
	if (rc) {
		if (!softnic_last_error(qp->nic)[0])
			softnic_set_error(qp->nic, "qp_connect_wire: %s: %s", c->name, strerror(rc));
		engine_lock_mgmt(e);
		qp->wire = NULL;
		engine_unlock_mgmt(e);
		conn_free(c);
	}
	return rc;
}

void softnic_wire_qp_destroyed(softnic_qp *qp)
{
	softnic_wire *wn = qp->nic->wire;
	wire_conn *c = qp->wire, **pp;

	if (!c)
		return;
	pthread_mutex_lock(&wn->lock); /* after the thread's round */
	for (pp = &wn->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	pthread_mutex_unlock(&wn->lock);
	qp->wire = NULL; /* the QP left its engine already */
	conn_free(c);
}

void softnic_wire_close(softnic *nic)
{
	softnic_wire *wn = nic->wire;

	if (!wn)
		return;
	__atomic_store_n(&wn->stop, 1, __ATOMIC_RELEASE);
	if (wn->running)
		pthread_join(wn->thread, NULL);
	wn->running = 0;
	/* Each takes its mirror with it (close must not meet a mirror first). */
	while (wn->conns)
		softnic_qp_destroy(wn->conns->qp);
}

void softnic_wire_release(softnic *nic)
{
	softnic_wire *wn = nic->wire;

	if (!wn)
		return;
	unlink(wn->block_name);
	pthread_mutex_destroy(&wn->lock);
	free(wn);
	nic->wire = NULL;
}

/* ------------------------------------------------------------------ */
/* Requester: putting WQEs on the wire (the QP's engine). */

static wire_slot *slot_of(wire_conn *c, int side, uint64_t seq)
{
	return &c->f->slots[side][seq % WIRE_SLOTS];
}

/* Reserves len payload bytes (contiguous) in this side's ring; 0 when
 * the ring is too full now. */
static int ring_alloc(wire_conn *c, uint64_t len, uint64_t *off, uint64_t *span)
{
	uint64_t a = (len + WIRE_ALIGN - 1) & ~(uint64_t)(WIRE_ALIGN - 1);
	uint64_t pos, skip = 0;

	if (c->dhead == c->dtail && c->dhead % c->ring) {
		/* Empty: start at the base, so that anything up to the whole
		 * ring fits. */
		c->dhead = c->dtail = c->dhead - c->dhead % c->ring + c->ring;
	}
	pos = c->dhead % c->ring;
	if (pos + a > c->ring)
		skip = c->ring - pos; /* never split: start over at the ring's base */
	if (c->dhead + skip + a - c->dtail > c->ring)
		return 0;
	*off = (pos + skip) % c->ring;
	*span = skip + a;
	c->dhead += skip + a;
	return 1;
}

enum { WIRE_FULL = -1 }; /* wire_put: no room now, nothing done */

/* Resolves the WQE's local segments and the payload bytes it puts on the
 * wire (*out_len: bytes to send or to reserve). 0 or a syndrome. */
static int wire_local(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *src[SOFTNIC_MAX_SGE],
		      uint64_t *out_len, uint8_t *vs)
{
	int r = 0;

	p->dev = 0;
	*out_len = 0;
	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_DUMP: /* local only: checked here, a NOP on the wire */
		return snx_resolve_local(p, qp, w, 0, src, vs);
	case GIC_OPCODE_RDMA_READ:
		r = snx_resolve_local(p, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, src, vs);
		*out_len = w->total_len;
		break;
	case GIC_OPCODE_ATOMIC_FA:
	case GIC_OPCODE_ATOMIC_CS:
	case GIC_OPCODE_ATOMIC_MASKED_FA:
	case GIC_OPCODE_ATOMIC_MASKED_CS:
		if (w->num_sge != 1 || w->sge[0].len != w->atomic_size)
			return snx_fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
		r = snx_resolve_local(p, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, src, vs);
		break;
	default: /* writes and sends carry their payload */
		r = snx_resolve_local(p, qp, w, 0, src, vs);
		*out_len = w->total_len;
		break;
	}
	return r; /* p->dev: GPU memory among the local segments (wire_put, wire_land) */
}

/* Puts one decoded WQE on the wire. 0, WIRE_FULL, or a syndrome. */
static int wire_put(snx_pass *p, softnic_qp *q, wire_conn *c, const softnic_wqe *w, uint32_t nbb,
		    uint8_t *vs)
{
	uint8_t *src[SOFTNIC_MAX_SGE];
	uint64_t len, off, span;
	wire_slot *s;
	int r = wire_local(p, q->s, w, src, &len, vs);

	if (r)
		return r;
	if (len > c->ring)
		return snx_fail(vs, SOFTNIC_VSYND_WIRE_TOO_LONG, GIC_SYND_LOCAL_LENGTH_ERR);
	if (!ring_alloc(c, len, &off, &span))
		return WIRE_FULL;
	if (w->opcode != GIC_OPCODE_RDMA_READ && !w->atomic_size && w->opcode != GIC_OPCODE_NOP &&
	    w->opcode != GIC_OPCODE_DUMP) {
		if (p->dev)
			r = softnic_dev_write(p->sh, q->s, w, src, c->data[c->side] + off,
					      SNX_DEV_LOCAL, vs);
		else
			snx_move_write(w, src, c->data[c->side] + off);
		if (r) {
			c->dhead -= span; /* nothing left: the room goes back */
			return r;
		}
	}
	s = slot_of(c, c->side, c->tx_seq);
	s->raddr = w->raddr;
	s->data_off = off;
	s->atomic_add = w->atomic_add;
	s->atomic_cmp = w->atomic_cmp;
	s->atomic_swap_mask = w->atomic_swap_mask;
	s->atomic_cmp_mask = w->atomic_cmp_mask;
	s->rkey = w->rkey;
	s->len = (uint32_t)len;
	s->imm = w->imm;
	s->opcode = w->opcode == GIC_OPCODE_DUMP ? GIC_OPCODE_NOP : w->opcode;
	s->fm_ce_se = w->fm_ce_se;
	s->atomic_size = w->atomic_size;
	s->rnr_retry = (uint8_t)q->s->rnr_retry;
	c->span[c->tx_seq % WIRE_SLOTS] = span;
	c->nbb[c->tx_seq % WIRE_SLOTS] = nbb;
	c->tx_seq++;
	/* Publishes the slot and its payload to the responder. */
	__atomic_store_n(&c->f->side[c->side].head, c->tx_seq, __ATOMIC_RELEASE);
	return 0;
}

/* Puts the announced WQEs on the wire while slots and payload room last;
 * a WQE that fails here is recorded, and completes once those before it
 * have. */
static void wire_issue(snx_pass *p, softnic_qp *q, wire_conn *c)
{
	snx_qp *qp = q->s;
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];

	while (!c->fail_set && c->issue_bb < qp->target && c->tx_seq - c->tx_done < WIRE_SLOTS) {
		const gic_ctrl_seg *ctrl = (const gic_ctrl_seg *)(qp->sq_buf +
			(c->issue_bb & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB);
		uint32_t nbb = gic_wqe_bb_count(ctrl->qpn_ds_be);
		softnic_wqe w;
		uint8_t vs = 0;
		int r;

		memset(&w, 0, sizeof(w));
		w.opcode = (uint8_t)gic_be32toh(ctrl->opmod_idx_opcode_be);
		if (c->issue_bb + nbb > qp->target) {
			nbb = (uint32_t)(qp->target - c->issue_bb); /* as snx_step() */
			r = snx_fail(&vs, SOFTNIC_VSYND_WQE_PAST_DBREC, GIC_SYND_LOCAL_QP_OP_ERR);
		} else {
			snx_copy_wqe(qp, c->issue_bb, nbb, buf);
			r = snx_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, &w, &vs);
			if (!r && p->sh->strict && w.wqe_index != (uint16_t)c->issue_bb)
				r = snx_fail(&vs, SOFTNIC_VSYND_STRICT_WQE_INDEX,
					     GIC_SYND_LOCAL_QP_OP_ERR);
			if (!r)
				r = wire_put(p, q, c, &w, nbb, &vs);
		}
		if (r == WIRE_FULL)
			return;
		if (r) {
			c->fail_set = 1;
			c->fail_bb = c->issue_bb;
			c->fail_synd = (uint8_t)r;
			c->fail_vs = vs;
			c->fail_opcode = w.opcode;
			c->fail_nbb = nbb;
			return;
		}
		c->issue_bb += nbb;
	}
}

/* ------------------------------------------------------------------ */
/* Requester: completing from the answers (the QP's engine). */

/* Lands an answered read or atomic in the local scatter list. 0 or a
 * syndrome. */
static int wire_land(snx_pass *p, snx_qp *qp, const wire_conn *c, const wire_slot *s,
		     const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *dst[SOFTNIC_MAX_SGE];
	const uint8_t *from;
	int r;

	if (w->opcode != GIC_OPCODE_RDMA_READ && !w->atomic_size)
		return 0;
	p->dev = 0;
	r = snx_resolve_local(p, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, dst, vs);
	if (r)
		return r;
	if (p->dev) /* GPU memory: the result or the read data through CUDA */
		return softnic_dev_read(p->sh, qp, w, dst,
					w->atomic_size ? (uint8_t *)(uintptr_t)&s->result
						       : c->data[c->side] + s->data_off,
					SNX_DEV_LOCAL, vs);
	if (w->atomic_size) {
		memcpy(dst[0], &s->result, w->atomic_size);
		return 0;
	}
	from = c->data[c->side] + s->data_off;
	for (uint32_t i = 0; i < w->num_sge; i++) {
		memcpy(dst[i], from, w->sge[i].len);
		from += w->sge[i].len;
	}
	return 0;
}

/* Completes the WQE at qp->cons from its slot: the answer (answered), or
 * the peer's loss. Returns 0 when the CQ has no room (retried later). */
static int wire_complete(snx_pass *p, softnic_qp *q, wire_conn *c, const wire_slot *s,
			 int answered)
{
	snx_qp *qp = q->s;
	uint32_t nbb = c->nbb[c->tx_done % WIRE_SLOTS];
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];
	softnic_wqe w;
	uint8_t vs = 0;
	int synd, claimed = 0;

	snx_copy_wqe(qp, qp->cons, nbb, buf);
	synd = snx_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, &w, &vs); /* 0: it was sent */
	if (qp->in_error) {
		synd = snx_fail(&vs, SOFTNIC_VSYND_NONE, GIC_SYND_WR_FLUSH_ERR);
	} else if (!answered) {
		synd = snx_fail(&vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	} else if (s->syndrome) {
		synd = s->syndrome;
		vs = s->vendor_syndrome;
	} else if (w.fm_ce_se & GIC_CTRL_CQ_UPDATE) {
		int got = snx_cq_claim(p->sh, qp->send_cq, 1);

		if (!got) {
			p->st.cq_full_stalls++;
			return 0;
		}
		claimed = 1;
		synd = got == SNX_CQ_LOST
			       ? snx_fail(&vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR)
			       : wire_land(p, qp, c, s, &w, &vs);
	} else {
		synd = wire_land(p, qp, c, s, &w, &vs);
	}
	if (!snx_complete(p, qp, &w, synd, vs, claimed)) {
		p->st.cq_full_stalls++;
		return 0;
	}
	qp->cons += nbb;
	p->st.wqes_executed++;
	return 1;
}

/* Completes, in order, what has been answered (everything in flight once
 * the peer is gone), then a WQE that failed before it left. */
static int wire_drain(snx_pass *p, softnic_qp *q, wire_conn *c)
{
	int done = 0, gone = conn_gone(c);

	while (c->tx_done < c->tx_seq) {
		const wire_slot *s = slot_of(c, c->side, c->tx_done);
		int answered = __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) == c->tx_done + 1;

		/* The acquire of done orders the reads of the answer and of
		 * the read data after it. */
		if (!answered && !gone)
			break;
		if (!wire_complete(p, q, c, s, answered))
			return done;
		c->dtail += c->span[c->tx_done % WIRE_SLOTS];
		c->tx_done++;
		done++;
	}
	if (c->fail_set && c->tx_done == c->tx_seq && q->s->cons == c->fail_bb) {
		softnic_wqe w;

		memset(&w, 0, sizeof(w));
		w.opcode = c->fail_opcode;
		if (!snx_complete(p, q->s, &w, c->fail_synd, c->fail_vs, 0))
			return done;
		q->s->cons += c->fail_nbb;
		c->fail_set = 0;
		done++;
	}
	return done;
}

int softnic_wire_progress(softnic_qp *q, softnic_stats *st)
{
	wire_conn *c = q->wire;
	snx_qp *qp = q->s;
	snx_pass p;
	int done;

	snx_pass_init(&p, q->nic->shared);
	if (!snx_pass_begin(&p, qp))
		return 0; /* nothing new, nothing in flight (cons == target) */
	done = wire_drain(&p, q, c);
	if (c->tx_done == c->tx_seq && !c->fail_set && (qp->in_error || conn_gone(c))) {
		/* Nothing in flight: what is left flushes (a QP in error
		 * executes nothing), or fails as a vanished peer's: the link
		 * is forced, so nothing runs against the mirror. */
		p.link = SNX_QP_PEER_GONE;
		while (qp->cons < qp->target && snx_step(&p, qp))
			done++;
		c->issue_bb = qp->cons;
	} else if (!qp->in_error && !conn_gone(c)) {
		wire_issue(&p, q, c);
	}
	snx_pass_end(&p, qp, st);
	return done;
}

/* ------------------------------------------------------------------ */
/* Responder: the wire thread hands requests to the mirror and answers. */

/* A WQE with no data segment (a zero-length write, read or send): a
 * zero byte count would mean 2^31 bytes. */
static uint32_t mirror_wqe_bare(gic_sq *sq, uint64_t pos, const wire_slot *s, uint8_t sig)
{
	uint32_t ctl[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	int has_raddr = s->opcode != GIC_OPCODE_SEND && s->opcode != GIC_OPCODE_SEND_IMM;

	gic_ctrl_seg_words(ctl, (uint16_t)pos, s->opcode, 0, sq->qpn, sig,
			   (uint8_t)(has_raddr ? 2 : 1), s->imm);
	gic_st_seg16(gic_sq_seg(sq, pos, 0), ctl);
	if (has_raddr) {
		gic_raddr_seg_words(r, s->raddr, s->rkey);
		gic_st_seg16(gic_sq_seg(sq, pos, 1), r);
	}
	return 1;
}

/* Builds request s as a mirror WQE at the mirror's next position; its
 * local segment is the request's payload (or landing area) in the ring. */
static void mirror_post(wire_conn *c, const wire_slot *s)
{
	gic_sq *sq = &c->msq;
	uint64_t pos = sq->resv;
	uint64_t laddr = (uint64_t)(uintptr_t)(c->data[!c->side] + s->data_off);
	uint64_t res = (uint64_t)(uintptr_t)&s->result;
	uint32_t lkey = softnic_mr_lkey(c->mr), nbb;
	uint8_t sig = (uint8_t)(GIC_CTRL_CQ_UPDATE | (s->fm_ce_se & GIC_CTRL_SOLICITED));
	gic_masked_args m = { s->atomic_add, s->atomic_cmp, s->atomic_swap_mask, s->atomic_cmp_mask };

	switch (s->opcode) {
	case GIC_OPCODE_NOP:
		nbb = gic_wqe_nop(sq, pos, sig);
		break;
	case GIC_OPCODE_ATOMIC_FA:
		nbb = gic_wqe_atomic_fa(sq, pos, s->raddr, s->rkey, s->atomic_add, res, lkey, sig);
		break;
	case GIC_OPCODE_ATOMIC_CS:
		nbb = gic_wqe_atomic_cs(sq, pos, s->raddr, s->rkey, s->atomic_cmp, s->atomic_add, res,
					lkey, sig);
		break;
	case GIC_OPCODE_ATOMIC_MASKED_FA:
	case GIC_OPCODE_ATOMIC_MASKED_CS:
		nbb = gic_wqe_masked_atomic(sq, pos, s->opcode, s->atomic_size, s->raddr, s->rkey, &m,
					    res, lkey, sig);
		break;
	case GIC_OPCODE_SEND:
	case GIC_OPCODE_SEND_IMM:
		nbb = s->len ? gic_wqe_send(sq, pos, s->opcode, laddr, lkey, s->len, sig, s->imm)
			     : mirror_wqe_bare(sq, pos, s, sig);
		break;
	default: /* RDMA_WRITE, RDMA_WRITE_IMM, RDMA_READ */
		nbb = s->len ? gic_wqe_write(sq, pos, s->opcode, s->raddr, s->rkey, laddr, lkey,
					     s->len, sig, s->imm)
			     : mirror_wqe_bare(sq, pos, s, sig);
		break;
	}
	sq->resv = pos + nbb;
}

/* Hands the peer's new requests to the mirror and turns the mirror's
 * CQEs into answers. Returns 1 when it did anything. */
static int conn_serve(wire_conn *c)
{
	wire_file *f = c->f;
	uint64_t head = __atomic_load_n(&f->side[!c->side].head, __ATOMIC_ACQUIRE);
	uint64_t first = c->rx_posted;
	gic_cqe_info info;
	int busy = 0;

	while (c->rx_posted < head && c->rx_posted - c->rx_answered < WIRE_MIRROR_DEPTH) {
		const wire_slot *s = slot_of(c, !c->side, c->rx_posted);

		if (s->rnr_retry != c->mirror_rnr) {
			softnic_qp_set_rnr(c->mirror, s->rnr_retry, -1);
			c->mirror_rnr = s->rnr_retry;
		}
		mirror_post(c, s);
		c->rx_posted++;
	}
	if (c->rx_posted != first) {
		/* Orders the WQE stores before the record and the doorbell. */
		gic_sq_ring(&c->msq, c->msq.resv, GIC_ORDER_RELEASE_SYS);
		busy = 1;
	}
	while (c->rx_answered < c->rx_posted &&
	       !gic_cq_poll_one(&c->mcqv, &info, GIC_ORDER_RELEASE_SYS)) {
		wire_slot *s = slot_of(c, !c->side, c->rx_answered);
		s->syndrome = info.syndrome;
		s->vendor_syndrome = info.vendor_syndrome;
		c->rx_answered++;
		/* Publishes the answer (and the mirror's writes of the result
		 * and read data, which its CQE's acquire ordered before). */
		__atomic_store_n(&s->done, c->rx_answered, __ATOMIC_RELEASE);
		busy = 1;
	}
	return busy;
}

/* The peer went: what is in flight fails (transport retry error, then
 * flushes); an idle QP goes to error at once, so that its receives flush,
 * and the next WQE posted carries the retry error. */
static void conn_set_gone(softnic_wire *wn, wire_conn *c, const char *why)
{
	softnic_qp *qp = c->qp;
	engine *e = &qp->nic->engines[qp->engine];

	softnic_set_error(wn->nic, "wire: QP 0x%x: peer QP 0x%x %s", qp->s->qpn, c->peer_qpn, why);
	engine_lock_mgmt(e); /* the engine's pass is not running */
	__atomic_store_n(&qp->s->link, SNX_QP_PEER_GONE, __ATOMIC_RELEASE);
	__atomic_store_n(&c->gone, 1, __ATOMIC_RELEASE);
	if (!qp->s->in_error && qp->s->cons == qp->s->target && c->tx_seq == c->tx_done) {
		qp->s->err.syndrome = GIC_SYND_TRANSPORT_RETRY_EXC_ERR;
		qp->s->err.vendor_syndrome = SOFTNIC_VSYND_PEER_GONE;
		qp->s->err.wqe_index = (uint16_t)qp->s->cons;
		/* The next WQE posted says why (then the rest flush). */
		qp->s->pending_synd = GIC_SYND_TRANSPORT_RETRY_EXC_ERR;
		qp->s->pending_vs = SOFTNIC_VSYND_PEER_GONE;
		/* Publishes err, then the state the engine flushes on. */
		__atomic_store_n(&qp->s->in_error, 1, __ATOMIC_RELEASE);
	}
	engine_unlock_mgmt(e);
}

/* Every WIRE_CHECK_NS: is the peer's process alive, its QP there, and,
 * when it never attached, has a request waited too long? */
static void conn_check(softnic_wire *wn, wire_conn *c, uint64_t now)
{
	const wire_side *ps = &c->f->side[!c->side];

	if (conn_gone(c) || now < c->next_check_ns)
		return;
	c->next_check_ns = now + WIRE_CHECK_NS;
	if (!__atomic_load_n(&ps->attached, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&c->f->side[c->side].head, __ATOMIC_RELAXED) &&
		    now - c->connect_ns > WIRE_ATTACH_NS)
			conn_set_gone(wn, c, "never connected back (10 s)");
		return;
	}
	/* pid and start_time were written before attached was released. */
	if (__atomic_load_n(&ps->detached, __ATOMIC_ACQUIRE))
		conn_set_gone(wn, c, "was destroyed");
	else if (!pid_alive(ps->pid, ps->start_time))
		conn_set_gone(wn, c, "is gone: its process ended");
}

int softnic_wire_service(softnic *nic)
{
	softnic_wire *wn = __atomic_load_n(&nic->wire, __ATOMIC_ACQUIRE);
	uint64_t now;
	int busy = 0;

	if (!wn || pthread_mutex_trylock(&wn->lock))
		return 0; /* a connection is being made or destroyed: next time */
	now = gic_now_ns();
	for (wire_conn *c = wn->conns; c; c = c->next) {
		if (!conn_gone(c))
			busy |= conn_serve(c);
		conn_check(wn, c, now);
	}
	pthread_mutex_unlock(&wn->lock);
	return busy;
}

/* The wire thread of a softnic without engine threads (with them, engine
 * 0 serves the wire between its passes): naps when idle for long. */
static void *wire_main(void *arg)
{
	softnic_wire *wn = arg;
	unsigned idle = 0;

	/* A service loop, not a wait: it ends when softnic_close() sets stop. */
	while (!__atomic_load_n(&wn->stop, __ATOMIC_ACQUIRE)) {
		if (softnic_wire_service(wn->nic)) {
			idle = 0;
		} else if (++idle < WIRE_IDLE_SPINS) {
			sched_yield();
		} else {
			struct timespec ts = { 0, WIRE_NAP_NS };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}
