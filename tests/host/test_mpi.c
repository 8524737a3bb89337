/*
 * softnic across processes: one PE per process (`mpiexec -n N test_mpi
 * CASE`), the MPI bootstrap, gic/softnic_shm.h.
 *
 *   transfer     every PE writes a patterned slice into every other PE's
 *                shared region (inline and pointer writes of many sizes, in
 *                batches under one doorbell), adds to a counter with
 *                ATOMIC_FA, and posts a bad rkey, a write past a region and
 *                a write to a region without REMOTE_WRITE, each on its own
 *                QP; then every PE checks every byte it received, the
 *                counter, the fetched values, the error CQEs and the guard
 *                after its region. Rank 0 prints "PASSED" only when every
 *                PE passed; the exit status is 0 only then.
 *   peer_exit    PE 1 leaves without closing anything (_exit); the others
 *                keep writing to it and must get a PEER_GONE error CQE
 *                within a time limit, and the bootstrap's ETIMEDOUT.
 *   peer_killed  the same, PE 1 killed by SIGKILL.
 *   cq_lock_dead a process dies holding a CQ's lock (white box: a forked
 *                child of the CQ's owner takes it and exits): PE 0's
 *                WRITE_IMM, whose receive completion needs PE 1's such CQ,
 *                must fail with PEER_GONE within a time limit; a QP whose
 *                own send CQ is so locked must go to error (its CQE cannot
 *                be written: the poller's limit ends the wait). No spin
 *                without a limit.
 *   gpu_path     shm.c's GPU-region path without a GPU (white box: a fake
 *                CUDA part whose "GPU memory" is arena memory, copied with
 *                memcpy): PE 0 writes and fetch-adds into PE 1's exported
 *                region from a local region also marked GPU memory; the
 *                bytes, counter and fetched values are checked, and PE 1's
 *                buffer is opened once. A write while PE 0 has no CUDA part,
 *                and one into a buffer of an unknown handle kind, must each
 *                fail with a REMOTE_ACCESS error CQE.
 *   shm_full     arenas larger than /dev/shm: softnic_open_shared must
 *                fail with ENOSPC on every PE (not a SIGBUS later) and the
 *                bootstrap must stay usable. Skipped where /dev/shm holds
 *                the largest arena (64 GiB).
 *   caller_queues a QP's and a CQ's queues in caller memory: refused
 *                (EINVAL) on the heap, taken from the PE's arena.
 *
 * Every wait has a time limit; every failure prints what and where.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gic/boot.h"
#include "gic/conn.h"
#include "gic/softnic_shm.h"
#include "mpi_kit.h"          /* FAIL, mk: shared with gic-gpu-mpi */
#include "softnic_internal.h" /* white box: a CQ's lock word (cq_lock_dead) */
#include "devmem.h"           /* white box: a fake CUDA part (gpu_path) */
#include "shm_gpu.h"

#define SEC 1000000000ull
#define WAIT_NS (30 * SEC)      /* any one wait, even under sanitizers */

enum {
	MAXPE = 8,
	NQP = 4,                 /* per peer: data, bad rkey, bounds, access */
	SLICE = 192 * 1024,      /* bytes each PE writes into each other PE */
	NATOMIC = 64,
	BATCH = 16,              /* WQEs per doorbell */
	GUARD = 4096,
	ARENA = 16 << 20,
};

typedef struct pe {
	gic_boot *b;
	softnic *nic;
	softnic_pd *pd;
	softnic_cq *cq[MAXPE][NQP];
	softnic_qp *qp[MAXPE][NQP];
	gic_sq sq[MAXPE][NQP];
	gic_cq cqv[MAXPE][NQP];
	uint8_t *region;     /* arena: npe slices, the counter, then GUARD bytes */
	size_t region_len;   /* registered: slices and counter */
	uint8_t *ro;         /* arena: peers may only read it */
	softnic_mr *mr, *ro_mr;
	uint8_t *src;        /* heap: the patterns, npe slices; local access only */
	softnic_mr *src_mr;
	uint64_t *fetched;   /* heap: ATOMIC_FA results, NATOMIC per peer */
	softnic_mr *fetch_mr;
	gic_conn_info theirs[MAXPE][NQP];
} pe;

/* ------------------------------------------------------------------ */
/* Setup: softnic, regions, QPs, records, connections. */

static int setup(pe *s, int *argc, char ***argv)
{
	uint8_t (*mine)[NQP][GIC_CONN_WIRE_BYTES];
	int rc;

	s->b = mk_boot(argc, argv, MAXPE, &rc);
	if (!s->b)
		return rc;
	s->nic = mk_open(s->b, ARENA);
	if (!s->nic)
		return errno;
	s->pd = softnic_pd_alloc(s->nic);
	s->region_len = mk_counter_off() + 64;
	s->region = softnic_shared_alloc(s->nic, s->region_len + GUARD, 4096);
	s->ro = softnic_shared_alloc(s->nic, 4096, 4096);
	s->src = malloc((size_t)mk.npe * SLICE);
	s->fetched = calloc((size_t)mk.npe * NATOMIC, sizeof(uint64_t));
	if (!s->pd || !s->region || !s->ro || !s->src || !s->fetched) {
		FAIL("allocation: %s", softnic_last_error(s->nic));
		return ENOMEM;
	}
	memset(s->region + s->region_len, 0xa5, GUARD);
	for (int p = 0; p < mk.npe; p++)
		mk_pattern(s->src + (size_t)p * SLICE, SLICE, mk.me, p);
	s->mr = softnic_reg_mr(s->pd, s->region, s->region_len,
			       SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC |
			       SOFTNIC_ACCESS_LOCAL_WRITE);
	s->ro_mr = softnic_reg_mr(s->pd, s->ro, 4096, SOFTNIC_ACCESS_REMOTE_READ);
	/* Local-only regions may be anywhere in the process. */
	s->src_mr = softnic_reg_mr(s->pd, s->src, (size_t)mk.npe * SLICE, 0);
	s->fetch_mr = softnic_reg_mr(s->pd, s->fetched, (size_t)mk.npe * NATOMIC * 8,
				     SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!s->mr || !s->ro_mr || !s->src_mr || !s->fetch_mr) {
		FAIL("reg_mr: %s", softnic_last_error(s->nic));
		return ENOMEM;
	}
	/* A region peers could write must be in the arena. */
	errno = 0;
	if (softnic_reg_mr(s->pd, s->src, 64, SOFTNIC_ACCESS_REMOTE_WRITE) || errno != EINVAL)
		FAIL("reg_mr of heap memory with REMOTE_WRITE did not fail with EINVAL");

	mine = calloc((size_t)mk.npe * NQP, GIC_CONN_WIRE_BYTES);
	if (!mine)
		return ENOMEM;
	for (int p = 0; p < mk.npe; p++) {
		for (int k = 0; k < NQP && p != mk.me; k++) {
			/* QP 0 receives WRITE_IMM completions (cq_lock_dead) */
			if (mk_qp_open(s->nic, s->pd, p, k, k == 0, &s->cq[p][k], &s->qp[p][k],
				       &s->sq[p][k], &s->cqv[p][k])) {
				free(mine);
				return ENOMEM;
			}
			mk_conn_record(s->qp[p][k], (uint64_t)(uintptr_t)(k == 3 ? s->ro : s->region),
				       softnic_mr_rkey(k == 3 ? s->ro_mr : s->mr), mine[p][k]);
		}
	}
	rc = mk_connect(s->b, s->nic, NQP, mine, &s->qp[0][0], &s->theirs[0][0]);
	free(mine);
	return rc;
}

static void teardown(pe *s)
{
	softnic_close(s->nic); /* frees QPs, CQs, MRs, PDs and the arena */
	free(s->src);
	free(s->fetched);
	gic_boot_free(s->b);
}

/* ------------------------------------------------------------------ */
/* transfer */

static const char *cqe_text(const gic_sq *sq)
{
	return mk_cqe_text(sq->err_info.syndrome, sq->err_info.vendor_syndrome);
}

/* Writes this PE's slice of PE p's region, then the atomics. */
static void put_all(void *ctx, int p)
{
	pe *s = ctx;
	static const uint32_t lens[] = { 1, 8, 13, 64, 100, 511, 700, 4096, 3, 65536, 12, 9000, 48 };
	const uint32_t nlens = sizeof(lens) / sizeof(lens[0]);
	gic_sq *sq = &s->sq[p][0];
	const gic_conn_info *t = &s->theirs[p][0];
	const uint8_t *pat = s->src + (size_t)p * SLICE;
	uint64_t raddr = t->addr + (uint64_t)mk.me * SLICE, pos;
	uint32_t off = 0, n = 0, inb = 0;
	int rc;

	while (off < SLICE) {
		uint32_t len = lens[n % nlens] < SLICE - off ? lens[n % nlens] : SLICE - off;
		int inl = len <= sq->max_inline && n % 3 != 2;
		uint32_t nbb = inl ? gic_bb_for_ds(gic_ds_inline_write(len)) : 1;
		int last = off + len == SLICE, sig = last || ++inb == BATCH;
		uint8_t f = sig ? GIC_CTRL_CQ_UPDATE : 0;

		rc = gic_sq_reserve_excl(sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
		if (rc) {
			FAIL("writing to PE %d: reserve at byte %u: %s (%s)", p, off, strerror(rc),
			     rc == EIO ? cqe_text(sq) : "");
			return;
		}
		if (inl)
			gic_wqe_write_inline(sq, pos, raddr + off, t->rkey, pat + off, len, f);
		else
			gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_WRITE, raddr + off, t->rkey,
				      (uint64_t)(uintptr_t)(pat + off), softnic_mr_lkey(s->src_mr),
				      len, f, 0);
		if (sig) { /* one doorbell for the batch */
			gic_sq_note_signaled(sq, pos + nbb, 0);
			gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
			inb = 0;
		}
		off += len;
		n++;
	}
	for (int k = 0; k < NATOMIC; k++) {
		int sig = k % 8 == 7;

		rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
		if (rc) {
			FAIL("atomics to PE %d: reserve: %s", p, strerror(rc));
			return;
		}
		gic_wqe_atomic_fa(sq, pos, t->addr + mk_counter_off(), t->rkey, (uint64_t)mk.me + 1,
				  (uint64_t)(uintptr_t)&s->fetched[p * NATOMIC + k],
				  softnic_mr_lkey(s->fetch_mr), sig ? GIC_CTRL_CQ_UPDATE : 0);
		if (sig) {
			gic_sq_note_signaled(sq, pos + 1, 0);
			gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
		}
	}
	rc = gic_sq_quiet(sq, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
	if (rc)
		FAIL("completing the writes to PE %d: %s (%s; %s)", p, strerror(rc),
		     rc == EIO ? cqe_text(sq) : "", softnic_qp_error(s->qp[p][0]));
}

/* Posts one bad write on QP k to PE p; it must fail with synd/vs. */
static void bad_write(void *ctx, int p, int k, uint64_t raddr, uint32_t rkey, uint32_t len,
		      uint8_t synd, uint8_t vs, const char *what)
{
	pe *s = ctx;
	gic_sq *sq = &s->sq[p][k];
	uint8_t data[16];
	int rc;

	memset(data, 0x5a, sizeof(data));
	rc = mk_write_wait(sq, raddr, rkey, data, len, gic_now_ns() + WAIT_NS);
	mk_check_bad(rc, sq->err_info.syndrome, sq->err_info.vendor_syndrome, s->qp[p][k], p, synd,
		     vs, what);
}

/* Checks what the other PEs wrote here. */
static void check_received(void *ctx)
{
	pe *s = ctx;

	mk_check_received(s->region, s->region_len);
	for (size_t i = 0; i < 4096; i++) {
		if (s->ro[i]) {
			FAIL("read-only region byte %zu was written", i);
			break;
		}
	}
}

/* The old values this PE's ATOMIC_FAs fetched from PE p's counter. */
static void check_fetched(void *ctx, int p)
{
	mk_check_fetched(&((pe *)ctx)->fetched[p * NATOMIC], p);
}

/* The third error check: a region without REMOTE_WRITE (QP 3). */
static void more_bad(void *ctx, int p)
{
	pe *s = ctx;

	bad_write(s, p, 3, s->theirs[p][3].addr, s->theirs[p][3].rkey, 8,
		  GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_REMOTE_ACCESS,
		  "write to a region without REMOTE_WRITE");
}

static int case_transfer(pe *s)
{
	static const mk_transfer_ops ops = { put_all, check_fetched, bad_write, more_bad, 1,
					     check_received, "" };

	return mk_transfer(s->b, &ops, s, &s->theirs[0][0], NQP, s->region_len);
}

/* Gathers every PE's failure count; rank 0 prints the verdict of case
 * name. 0 when every PE passed. */
static int finish_boot(gic_boot *b, const char *name)
{
	int passed = mk_all_passed(b);

	if (mk.me == 0)
		printf("test_mpi %s: %s\n", name, passed ? "PASSED" : "FAILED");
	return passed ? 0 : 1;
}

static int finish(pe *s, const char *name)
{
	return finish_boot(s->b, name);
}

/* ------------------------------------------------------------------ */
/* peer_exit, peer_killed: PE 1 vanishes; the others must notice. */

static int case_vanish(pe *s, int killed)
{
	const char *name = killed ? "peer_killed" : "peer_exit";
	gic_sq *sq;
	uint64_t t0, pos, writes = 0;
	const char *why = "";
	int rc;

	/* hydra tells the survivors of a failed process with SIGUSR1 (with
	 * -disable-auto-cleanup); this test expects that failure. Everyone
	 * ignores it before PE 1 leaves. */
	signal(SIGUSR1, SIG_IGN);
	rc = gic_boot_barrier(s->b, WAIT_NS);
	if (rc) {
		FAIL("%s: barrier before PE 1 leaves: %s", name, gic_boot_last_error(s->b));
		return 1;
	}
	if (mk.me == 1) {
		fprintf(stderr, "test_mpi %s: PE 1 %s now, closing nothing\n", name,
			killed ? "kills itself (SIGKILL)" : "exits");
		if (killed)
			raise(SIGKILL);
		_exit(0);
	}
	sq = &s->sq[1][0];
	t0 = gic_now_ns();
	/* Writes (each waited for) until one fails: the peer's exit must
	 * turn into an error CQE, not a hang. */
	for (;;) {
		rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
		if (rc)
			break;
		gic_wqe_write_inline_u64(sq, pos, s->theirs[1][0].addr + 8 * (writes % 64),
					 s->theirs[1][0].rkey, writes, GIC_CTRL_CQ_UPDATE);
		gic_sq_note_signaled(sq, pos + 1, 0);
		gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
		rc = gic_sq_wait_retired(sq, pos + 1, 0, GIC_ORDER_RELEASE_SYS,
					 gic_now_ns() + WAIT_NS);
		if (rc)
			break;
		writes++;
		if (gic_now_ns() - t0 > 10 * SEC) {
			rc = ETIMEDOUT;
			break;
		}
	}
	softnic_shared_peer_gone(s->nic, 1, &why);
	if (mk_check_peer_gone(rc, sq, name, writes, t0))
		fprintf(stderr, "test_mpi %s: PE %d: PE 1 gone (%s) after %llu writes, %.1f ms: "
			"%s\n", name, mk.me, why, (unsigned long long)writes,
			(gic_now_ns() - t0) / 1e6, softnic_qp_error(s->qp[1][0]));
	/* The bootstrap cannot complete without PE 1 either. */
	t0 = gic_now_ns();
	rc = gic_boot_barrier(s->b, SEC / 2);
	if (rc != ETIMEDOUT)
		FAIL("%s: barrier without PE 1 gave %s, not ETIMEDOUT", name, strerror(rc));
	else if (gic_now_ns() - t0 > 5 * SEC)
		FAIL("%s: the barrier's time limit took %.1f s", name, (gic_now_ns() - t0) / 1e9);
	if (mk.me == 0)
		printf("test_mpi %s: %s\n", name, mk.failures ? "FAILED" : "PASSED");
	return mk.failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* cq_lock_dead */

/* A child of this process takes cq's lock (in the arena, shared with the
 * child) and exits holding it: a process killed inside the lock. */
static int lock_and_die(softnic_cq *cq)
{
	pid_t pid = fork();
	int status = 0;

	if (pid < 0) {
		FAIL("fork: %s", strerror(errno));
		return errno;
	}
	if (pid == 0) {
		__atomic_store_n(&cq->s->lock, (uint32_t)getpid(), __ATOMIC_SEQ_CST);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid) { /* reaped: kill(pid, 0) says ESRCH */
		FAIL("waitpid: %s", strerror(errno));
		return errno;
	}
	return 0;
}

static int case_cq_lock_dead(pe *s)
{
	gic_sq *sq;
	uint64_t t0, pos;
	double ms;
	int rc;

	/* PE 1's QP to PE 0 takes PE 0's WRITE_IMM completions on cq[0][0]. */
	if (mk.me == 1 && lock_and_die(s->cq[0][0]))
		FAIL("cq_lock_dead: could not lock PE 1's receive CQ");
	rc = gic_boot_barrier(s->b, WAIT_NS);
	if (rc) {
		FAIL("cq_lock_dead: barrier: %s", gic_boot_last_error(s->b));
		return 1;
	}
	if (mk.me == 0) {
		sq = &s->sq[1][0];
		t0 = gic_now_ns();
		rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
		if (!rc) {
			gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_WRITE_IMM, s->theirs[1][0].addr,
				      s->theirs[1][0].rkey, (uint64_t)(uintptr_t)s->src,
				      softnic_mr_lkey(s->src_mr), 64, GIC_CTRL_CQ_UPDATE, 0x1234);
			gic_sq_note_signaled(sq, pos + 1, 0);
			gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
			rc = gic_sq_wait_retired(sq, pos + 1, 0, GIC_ORDER_RELEASE_SYS,
						 gic_now_ns() + WAIT_NS);
		}
		ms = (gic_now_ns() - t0) / 1e6;
		if (rc != EIO)
			FAIL("cq_lock_dead: WRITE_IMM into a CQ a dead process holds: %s after "
			     "%.1f ms, not an error CQE", strerror(rc), ms);
		else if (sq->err_info.vendor_syndrome != SOFTNIC_VSYND_PEER_GONE ||
			 sq->err_info.syndrome != GIC_SYND_TRANSPORT_RETRY_EXC_ERR)
			FAIL("cq_lock_dead: expected PEER_GONE / TRANSPORT_RETRY_EXC_ERR, got %s",
			     cqe_text(sq));
		else if (ms > 10000)
			FAIL("cq_lock_dead: the error took %.1f ms", ms);
		else
			fprintf(stderr, "test_mpi cq_lock_dead: PE 0: WRITE_IMM failed after %.1f ms: "
				"%s\n", ms, softnic_qp_error(s->qp[1][0]));

		/* Its own send CQ locked by a dead process: no CQE can come;
		 * the QP must still go to error, and the wait must end. */
		sq = &s->sq[1][1];
		if (!lock_and_die(s->cq[1][1]) &&
		    !(rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS,
					       gic_now_ns() + WAIT_NS))) {
			gic_wqe_write_inline_u64(sq, pos, s->theirs[1][1].addr, s->theirs[1][1].rkey, 7,
						 GIC_CTRL_CQ_UPDATE);
			gic_sq_note_signaled(sq, pos + 1, 0);
			gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
			rc = gic_sq_wait_retired(sq, pos + 1, 0, GIC_ORDER_RELEASE_SYS,
						 gic_now_ns() + 3 * SEC);
			if (rc != ETIMEDOUT)
				FAIL("cq_lock_dead: a write whose send CQ a dead process holds: %s, "
				     "expected the poller's ETIMEDOUT", rc ? strerror(rc) : "success");
			else if (!softnic_qp_in_error(s->qp[1][1]))
				FAIL("cq_lock_dead: its QP is not in the error state");
			else
				fprintf(stderr, "test_mpi cq_lock_dead: PE 0: own send CQ abandoned: "
					"%s\n", softnic_qp_error(s->qp[1][1]));
		}
	}
	return finish(s, "cq_lock_dead");
}

/* ------------------------------------------------------------------ */
/* gpu_path */

enum { GP_BYTES = 4096, GP_ATOMIC = 8 };

static int fake_opens, fake_moves;

static int fake_move(void *ctx, const devmem_seg *seg, int n, char *why, size_t len)
{
	(void)ctx, (void)why, (void)len;
	for (int i = 0; i < n; i++)
		memcpy(seg[i].dst, seg[i].src, seg[i].len);
	__atomic_fetch_add(&fake_moves, 1, __ATOMIC_RELAXED);
	return 0;
}

static int fake_atomic(void *ctx, const devmem_atomic *a, void *t, uint64_t *old, char *why,
		       size_t len)
{
	(void)ctx;
	if (a->opcode != GIC_OPCODE_ATOMIC_FA || a->size != 8) {
		snprintf(why, len, "the fake part runs 8-byte fetch-adds only");
		return ENOTSUP;
	}
	*old = __atomic_fetch_add((uint64_t *)t, a->add, __ATOMIC_SEQ_CST);
	return 0;
}

/* The "GPU buffer" is arena memory: at the same address here. */
static int fake_open(void *ctx, const shm_gpu_buf *b, void **ptr, char *why, size_t len)
{
	(void)ctx, (void)why, (void)len;
	__atomic_fetch_add(&fake_opens, 1, __ATOMIC_RELAXED);
	*ptr = (void *)(uintptr_t)b->base;
	return 0;
}

static void fake_close(void *ctx, void *ptr) { (void)ctx, (void)ptr; }
static void fake_release(void *ctx) { (void)ctx; }

static const devmem_ops fake_dev_ops = { fake_move, fake_atomic, fake_release };
static const shm_gpu_ops fake_ipc_ops = { fake_open, fake_close, fake_release };

/* Both halves of the fake CUDA part. 0 or an errno. */
static int fake_attach(softnic *nic)
{
	int rc = softnic_devmem_attach(nic, &fake_dev_ops, NULL);

	return rc ? rc : softnic_shm_gpu_attach(nic, &fake_ipc_ops, NULL);
}

/* PE 1's "GPU" buffer (exported as kind, registered and marked GPU memory
 * with rights access); its address and rkey go into rec[0..1]. */
static uint8_t *gp_export(pe *s, uint32_t kind, uint64_t rec[2])
{
	uint8_t *buf = softnic_shared_alloc(s->nic, GP_BYTES + 64, 4096);
	shm_gpu_buf b;
	softnic_mr *mr;

	memset(&b, 0, sizeof(b));
	b.base = (uint64_t)(uintptr_t)buf;
	b.len = GP_BYTES + 64;
	b.kind = kind;
	if (!buf || softnic_shm_gpu_export(s->nic, &b) ||
	    !(mr = softnic_reg_mr(s->pd, buf, GP_BYTES + 64, 0))) {
		FAIL("gpu_path: exporting a buffer: %s", softnic_last_error(s->nic));
		return NULL;
	}
	softnic_mr_to_device(mr, SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC);
	rec[0] = b.base;
	rec[1] = softnic_mr_rkey(mr);
	return buf;
}

/* PE 0 posts one signaled write of len bytes of src on QP (1, k);
 * returns the poller's outcome. */
static int gp_write(pe *s, int k, uint64_t raddr, uint32_t rkey, uint32_t lkey, uint32_t len,
		    int inl)
{
	gic_sq *sq = &s->sq[1][k];
	uint32_t nbb = inl ? gic_bb_for_ds(gic_ds_inline_write(len)) : 1;
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);

	if (rc)
		return rc;
	if (inl)
		gic_wqe_write_inline(sq, pos, raddr, rkey, s->src, len, GIC_CTRL_CQ_UPDATE);
	else
		gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_WRITE, raddr, rkey,
			      (uint64_t)(uintptr_t)s->src, lkey, len, GIC_CTRL_CQ_UPDATE, 0);
	gic_sq_note_signaled(sq, pos + nbb, 0);
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return gic_sq_wait_retired(sq, pos + nbb, 0, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
}

/* A write that must fail with REMOTE_ACCESS_ERR / REMOTE_ACCESS. */
static void gp_refused(pe *s, int k, const uint64_t rec[2], const char *what)
{
	int rc = gp_write(s, k, rec[0], (uint32_t)rec[1], softnic_mr_lkey(s->src_mr), 8, 1);

	if (rc != EIO)
		FAIL("gpu_path: %s: %s, not an error CQE", what, rc ? strerror(rc) : "success");
	else if (s->sq[1][k].err_info.syndrome != GIC_SYND_REMOTE_ACCESS_ERR ||
		 s->sq[1][k].err_info.vendor_syndrome != SOFTNIC_VSYND_REMOTE_ACCESS)
		FAIL("gpu_path: %s: got %s", what, cqe_text(&s->sq[1][k]));
}

/* PE 0's part: writes and atomics into PE 1's buffer (rec[0..1]). */
static void gp_pe0(pe *s, const uint64_t rec[4])
{
	static uint64_t fetched[GP_ATOMIC];
	const uint32_t lens[] = { 1, 60, 200, 4096 - 261 };
	softnic_mr *lsrc, *lres;
	uint64_t off = 0, pos;
	gic_sq *sq = &s->sq[1][0];
	int rc = 0;

	gp_refused(s, 1, rec, "a write while this PE has no CUDA part");
	if (fake_attach(s->nic)) {
		FAIL("gpu_path: attaching the fake CUDA part");
		return;
	}
	/* Local regions marked GPU memory too: the moves go through the part. */
	lsrc = softnic_reg_mr(s->pd, s->src, GP_BYTES, 0);
	lres = softnic_reg_mr(s->pd, fetched, sizeof(fetched), 0);
	if (!lsrc || !lres) {
		FAIL("gpu_path: reg_mr: %s", softnic_last_error(s->nic));
		return;
	}
	softnic_mr_to_device(lsrc, 0);
	softnic_mr_to_device(lres, SOFTNIC_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 4 && !rc; i++) {
		int inl = i < 2;

		rc = gp_write(s, 0, rec[0] + off, (uint32_t)rec[1], softnic_mr_lkey(lsrc), lens[i], inl);
		if (rc)
			FAIL("gpu_path: write %d (%u bytes): %s (%s)", i, lens[i], strerror(rc),
			     rc == EIO ? cqe_text(sq) : "");
		/* Each write lands at its offset: the source's first bytes. */
		off += lens[i];
	}
	for (int k = 0; k < GP_ATOMIC && !rc; k++) {
		rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
		if (rc)
			break;
		gic_wqe_atomic_fa(sq, pos, rec[0] + GP_BYTES, (uint32_t)rec[1], 3,
				  (uint64_t)(uintptr_t)&fetched[k], softnic_mr_lkey(lres),
				  GIC_CTRL_CQ_UPDATE);
		gic_sq_note_signaled(sq, pos + 1, 0);
		gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
		rc = gic_sq_wait_retired(sq, pos + 1, 0, GIC_ORDER_RELEASE_SYS, gic_now_ns() + WAIT_NS);
		if (rc)
			FAIL("gpu_path: ATOMIC_FA %d: %s", k, strerror(rc));
		else if (fetched[k] != 3 * (uint64_t)k)
			FAIL("gpu_path: ATOMIC_FA %d fetched %llu, expected %llu", k,
			     (unsigned long long)fetched[k], 3 * (unsigned long long)k);
	}
	gp_refused(s, 2, rec + 2, "a write into a buffer of an unknown handle kind");
	if (__atomic_load_n(&fake_opens, __ATOMIC_RELAXED) != 1)
		FAIL("gpu_path: PE 1's buffer was opened %d times, expected once",
		     __atomic_load_n(&fake_opens, __ATOMIC_RELAXED));
	if (__atomic_load_n(&fake_moves, __ATOMIC_RELAXED) < 4 + GP_ATOMIC)
		FAIL("gpu_path: %d moves through the CUDA part, expected at least %d",
		     __atomic_load_n(&fake_moves, __ATOMIC_RELAXED), 4 + GP_ATOMIC);
}

/* PE 1's check of what PE 0 wrote. */
static void gp_check(const uint8_t *buf, const uint8_t *src0)
{
	const uint32_t lens[] = { 1, 60, 200, 4096 - 261 };
	uint64_t off = 0, counter;

	for (int i = 0; i < 4; i++) {
		if (memcmp(buf + off, src0, lens[i]))
			FAIL("gpu_path: write %d (%u bytes at %llu) wrong", i, lens[i],
			     (unsigned long long)off);
		off += lens[i];
	}
	memcpy(&counter, buf + GP_BYTES, 8);
	if (counter != 3 * GP_ATOMIC)
		FAIL("gpu_path: counter %llu, expected %d", (unsigned long long)counter, 3 * GP_ATOMIC);
}

static int case_gpu_path(pe *s)
{
	uint64_t mine[4] = { 0, 0, 0, 0 }, *all = calloc((size_t)mk.npe, sizeof(mine));
	uint8_t *buf = NULL, *want = malloc(SLICE);
	int rc;

	if (!all || !want) {
		FAIL("no memory");
		free(all);
		free(want);
		return 1;
	}
	if (mk.me == 1) {
		if (fake_attach(s->nic))
			FAIL("gpu_path: attaching the fake CUDA part");
		buf = gp_export(s, SHM_GPU_KIND_CUDA_IPC, mine);
		gp_export(s, 0x0bad, mine + 2);
	}
	rc = gic_boot_allgather(s->b, mine, sizeof(mine), all, WAIT_NS);
	if (rc)
		FAIL("gpu_path: allgather: %s", gic_boot_last_error(s->b));
	if (!rc && mk.me == 0)
		gp_pe0(s, all + 4); /* PE 1's record */
	rc = rc ? rc : gic_boot_barrier(s->b, WAIT_NS);
	if (!rc && mk.me == 1 && buf) {
		mk_pattern(want, SLICE, 0, 0); /* PE 0's src begins with its slice for PE 0 */
		gp_check(buf, want);
	}
	free(all);
	free(want);
	return finish(s, "gpu_path");
}

/* ------------------------------------------------------------------ */
/* shm_full */

static int case_shm_full(int *argc, char ***argv)
{
	const size_t big = (size_t)64 << 30;
	struct statvfs v;
	gic_boot *b = gic_boot_mpi(argc, argv);
	softnic *nic;
	uint64_t t0;
	int rc, err;

	if (!b) {
		FAIL("gic_boot_mpi: %s", strerror(errno));
		return 1;
	}
	mk.me = gic_boot_rank(b);
	if (statvfs("/dev/shm", &v)) {
		FAIL("statvfs(/dev/shm): %s", strerror(errno));
	} else if ((uint64_t)v.f_blocks * v.f_frsize >= big) {
		/* Every PE is on this host: all skip alike. */
		if (mk.me == 0)
			printf("test_mpi shm_full: SKIPPED (/dev/shm holds %llu GiB: a 64 GiB arena "
			       "fits)\n", (unsigned long long)((uint64_t)v.f_blocks * v.f_frsize >> 30));
		gic_boot_free(b);
		return 0;
	}
	t0 = gic_now_ns();
	errno = 0;
	nic = softnic_open_shared(NULL, b, big, WAIT_NS);
	err = errno;
	if (nic) {
		FAIL("shm_full: a 64 GiB arena opened on a %llu MiB /dev/shm",
		     (unsigned long long)((uint64_t)v.f_blocks * v.f_frsize >> 20));
		softnic_close(nic);
	} else if (err != ENOSPC) {
		FAIL("shm_full: softnic_open_shared failed with %s, not ENOSPC", strerror(err));
	} else if (gic_now_ns() - t0 > 20 * SEC) {
		FAIL("shm_full: failing took %.1f s", (gic_now_ns() - t0) / 1e9);
	}
	/* Every PE failed the same step: the collectives stayed matched. */
	rc = gic_boot_barrier(b, WAIT_NS);
	if (rc)
		FAIL("shm_full: barrier after the failed open: %s", gic_boot_last_error(b));
	rc = finish_boot(b, "shm_full");
	gic_boot_free(b);
	return rc;
}

/* ------------------------------------------------------------------ */
/* caller_queues: a shared softnic takes a QP's and a CQ's queues in
 * caller memory only inside this PE's arena (peers' engines consume them). */

static int case_caller_queues(pe *s)
{
	softnic_cq_attr ca = { .log_cqe_cnt = 4, .flags = SOFTNIC_MEM_INIT };
	softnic_qp_attr qa = { .log_sq_bb = 4, .flags = SOFTNIC_MEM_INIT };
	size_t ring = softnic_cq_ring_bytes(&ca), sq = softnic_qp_sq_bytes(&qa);
	void *heap = aligned_alloc(4096, 4096);
	uint8_t *in = softnic_shared_alloc(s->nic, ring + sq + 64, 4096);
	softnic_cq *cq;
	softnic_qp *qp;

	if (!heap || !in) {
		FAIL("caller_queues: memory: %s", softnic_last_error(s->nic));
	} else {
		ca.ring_mem = (softnic_qmem){ heap, ring };
		errno = 0;
		cq = softnic_cq_create_ex(s->nic, &ca);
		if (cq || errno != EINVAL || !strstr(softnic_last_error(s->nic), "shared arena"))
			FAIL("caller_queues: a CQ ring on the heap: %p, errno %d, '%s'", (void *)cq,
			     errno, softnic_last_error(s->nic));
		ca.ring_mem = (softnic_qmem){ in, ring };
		ca.dbrec_mem = (softnic_qmem){ in + ring + sq, 8 };
		cq = softnic_cq_create_ex(s->nic, &ca);
		if (!cq)
			FAIL("caller_queues: a CQ in the arena: %s", softnic_last_error(s->nic));
		qa.send_cq = cq;
		qa.sq_mem = (softnic_qmem){ in + ring, sq };
		qa.dbrec_mem = (softnic_qmem){ heap, 8 };
		errno = 0;
		qp = cq ? softnic_qp_create(s->pd, &qa) : NULL;
		if (cq && (qp || errno != EINVAL))
			FAIL("caller_queues: a QP record on the heap: %p, errno %d", (void *)qp, errno);
		qa.dbrec_mem = (softnic_qmem){ in + ring + sq + 8, 8 };
		qp = cq ? softnic_qp_create(s->pd, &qa) : NULL;
		if (cq && !qp)
			FAIL("caller_queues: a QP in the arena: %s", softnic_last_error(s->nic));
		if (qp && softnic_qp_destroy(qp))
			FAIL("caller_queues: destroy QP");
		if (cq && softnic_cq_destroy(cq))
			FAIL("caller_queues: destroy CQ");
	}
	softnic_shared_free(s->nic, in);
	free(heap);
	return finish(s, "caller_queues");
}

int main(int argc, char **argv)
{
	static const char *const cases[] = { "transfer", "peer_exit", "peer_killed", "cq_lock_dead",
					     "gpu_path", "shm_full", "caller_queues", NULL };
	const char *name = argc > 1 ? argv[1] : "";
	pe s;
	int rc;

	mk_init("test_mpi", WAIT_NS, SLICE, NATOMIC, GUARD, 1);
	if (!mk_known_case(name, argv[0], cases))
		return 2;
	memset(&s, 0, sizeof(s));
	if (!strcmp(name, "shm_full"))
		return case_shm_full(&argc, &argv);
	rc = setup(&s, &argc, &argv);
	if (!rc && !strcmp(name, "transfer"))
		rc = case_transfer(&s);
	else if (!rc && !strcmp(name, "cq_lock_dead"))
		rc = case_cq_lock_dead(&s);
	else if (!rc && !strcmp(name, "gpu_path"))
		rc = case_gpu_path(&s);
	else if (!rc && !strcmp(name, "caller_queues"))
		rc = case_caller_queues(&s);
	else if (!rc)
		rc = case_vanish(&s, !strcmp(name, "peer_killed"));
	if (rc && mk.me <= 0)
		printf("test_mpi %s: FAILED\n", name);
	if (s.nic)
		teardown(&s);
	else if (s.b)
		gic_boot_free(s.b);
	return rc ? 1 : 0;
}
