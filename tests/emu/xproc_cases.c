/*
 * The checked rounds of gic-emu-xproc (xproc_verbs.c), run by both sides at
 * once: each side is initiator toward the peer and target of the peer's
 * operations in the same phase. Every phase starts with the target's
 * state prepared (canaries, receives posted, counters set) and a step with
 * the peer; the payloads are patterns seeded by (iteration, side, phase,
 * message), so each side knows what the peer must have put where.
 *
 * Phases: RDMA WRITE (SGE lists of 1..4 entries, inline, signaled and
 * unsignaled, chains of 8), WRITE_WITH_IMM into posted receives, SEND and
 * SEND_WITH_IMM scattered over 1..4 receive entries, the same through an
 * SRQ, RDMA READ scattered over 1..4 entries, 8-byte fetch-add and
 * compare-swap (succeeding and failing); 1 byte to 4 MiB. And the peer
 * death: a survivor with WQEs posted sees an error, then flushes.
 */
#include <endian.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "xproc.h"

enum { PH_WRITE = 1, PH_WIMM, PH_SEND, PH_SRQ, PH_READ, PH_ATOM, PH_SANITY, PH_DEATH };
enum { GAP = 64, NMSG = 16, NSRQ = 7, SRQ_SLOT = 512 << 10, NATOM = 8, MAXOPS = 3 * NATOM };

static const char *const phase_name[] = { "", "write", "write-imm", "send", "send-srq",
					  "read", "atomics", "sanity", "peer death" };
static const uint32_t sizes[NMSG] = { 1, 2, 3, 8, 61, 64, 255, 256, 257, 1000, 4096, 4099,
				      65536, 65539, (1u << 20) + 5, 4u << 20 };
static const uint32_t srq_sizes[NSRQ] = { 1, 7, 64, 257, 4096, 65537, 300000 };

/* ThreadSanitizer: this thread's accesses to the memory that the peer
 * writes or reads with no completion here (a WRITE's target, a READ's
 * source, the atomics' counters) are ordered with the engine thread that
 * serves the peer by the steps over TCP and the peer's process, which it
 * cannot see (as a NIC's DMA). Between peer_mem_begin and peer_mem_end it
 * records none of them; every byte is checked all the same. */
#include "peer_mem.h"

/* One message of a phase: where it lies in an area, how it is cut. */
typedef struct msg {
	int m;            /* its index in the phase */
	uint32_t size, off;
	int nsge, rsge;   /* send-side and receive-side pieces */
	int inl, sig;
} msg;

/* ------------------------------------------------------------------ */
/* Patterns. */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The seed of message m of phase ph sent by side id in iteration iter. */
static uint64_t seed_of(int iter, int id, int ph, int m)
{
	return mix64((uint64_t)iter << 40 ^ (uint64_t)id << 32 ^ (uint64_t)ph << 16 ^
		     (uint64_t)m);
}

/* Bytes [k0, k0 + n) of the message seeded seed, into p. */
static void pat_fill(uint8_t *p, size_t k0, size_t n, uint64_t seed)
{
	uint64_t w = 0, wk = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		size_t k = k0 + i;

		if (k / 8 != wk) {
			wk = k / 8;
			w = mix64(seed + wk);
		}
		p[i] = (uint8_t)(w >> (8 * (k % 8)));
	}
}

/* The first index of p[0, n) that is not bytes [k0, k0 + n) of the
 * message seeded seed; n when all are. */
static size_t pat_diff(const uint8_t *p, size_t k0, size_t n, uint64_t seed)
{
	uint64_t w = 0, wk = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		size_t k = k0 + i;

		if (k / 8 != wk) {
			wk = k / 8;
			w = mix64(seed + wk);
		}
		if (p[i] != (uint8_t)(w >> (8 * (k % 8))))
			return i;
	}
	return n;
}

/* The first index of p[0, n) that is not the canary; n when none. */
static size_t canary_diff(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != XP_CANARY)
			return i;
	return n;
}

/* ------------------------------------------------------------------ */
/* Plans and pieces. */

/* The n messages of sz for iteration iter, slot after slot. Returns the
 * bytes of area they use. */
static uint32_t plan(msg *p, const uint32_t *sz, int n, int iter, uint32_t max_inline)
{
	uint32_t off = 0;

	for (int m = 0; m < n; m++) {
		int v = m + iter;

		p[m] = (msg){ .m = m, .size = sz[m], .off = off };
		p[m].nsge = 1 + v % XP_SGE;
		p[m].rsge = 1 + (v + 1) % XP_SGE;
		if ((uint32_t)p[m].nsge > sz[m])
			p[m].nsge = (int)sz[m];
		if ((uint32_t)p[m].rsge > sz[m])
			p[m].rsge = (int)sz[m];
		p[m].inl = sz[m] <= max_inline && v % 2 == 0;
		p[m].sig = v % 3 != 0 || m % XP_BATCH == XP_BATCH - 1 || m == n - 1;
		off += (sz[m] + XP_SGE * GAP + GAP + 63) & ~63u;
	}
	return off;
}

/* Piece j of mm cut in k: its offset in the area (*at), its length, and
 * its offset in the message (*lo). Pieces are GAP bytes apart. */
static void piece(const msg *mm, int k, int j, uint32_t *at, uint32_t *len, uint32_t *lo)
{
	uint32_t q = mm->size / (uint32_t)k, r = mm->size % (uint32_t)k;

	*lo = (uint32_t)j * q + ((uint32_t)j < r ? (uint32_t)j : r);
	*len = q + ((uint32_t)j < r);
	*at = mm->off + *lo + (uint32_t)j * GAP;
}

/* mm, cut in k at base, holds the message seeded seed, and the GAP bytes
 * after each piece hold the canary. Counted on s. */
static void check_msg(xside *s, const uint8_t *base, const msg *mm, int k, uint64_t seed,
		      const char *where)
{
	for (int j = 0; j < k; j++) {
		uint32_t at, len, lo;
		size_t d, c;

		piece(mm, k, j, &at, &len, &lo);
		d = pat_diff(base + at, lo, len, seed);
		c = canary_diff(base + at + len, GAP);
		if (!xp_check(s, d == len, "%s message %d (%u bytes, piece %d of %d): byte %zu "
					   "is 0x%02x, want 0x%02x",
			      where, mm->m, mm->size, j, k, lo + d, base[at + d],
			      (unsigned)(uint8_t)(mix64(seed + (lo + d) / 8) >> (8 * ((lo + d) % 8)))))
			return;
		if (!xp_check(s, c == GAP, "%s message %d (%u bytes, piece %d of %d): %zu bytes "
					   "past its end overwritten (0x%02x)",
			      where, mm->m, mm->size, j, k, c + 1, base[at + len + c]))
			return;
	}
}

/* ------------------------------------------------------------------ */
/* Posting and completions. */

int xp_wait_wc(xside *s, struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	double end = xp_now() + s->limit_s;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return 0;
		if (n < 0) {
			xp_fail(s, "%s: ibv_poll_cq returned %d", what, n);
			return -1;
		}
	} while (xp_now() < end);
	xp_fail(s, "%s: no completion within %.0f s on the %s CQ", what, s->limit_s,
		cq == s->scq ? "send" : "receive");
	return -1;
}

/* wc holds what e says. */
static int wc_matches(const struct ibv_wc *wc, const xp_wc *e)
{
	if (wc->status != e->status || wc->wr_id != e->wr_id || wc->qp_num != e->qp_num)
		return 0;
	if (e->status != IBV_WC_SUCCESS)
		return 1; /* the rest is not defined for an error */
	if (wc->opcode != e->opcode || (e->byte_len != UINT32_MAX && wc->byte_len != e->byte_len))
		return 0;
	if (e->with_imm == 1)
		return (wc->wc_flags & IBV_WC_WITH_IMM) && be32toh(wc->imm_data) == e->imm;
	return e->with_imm == -1 || !(wc->wc_flags & IBV_WC_WITH_IMM);
}

int xp_expect(xside *s, struct ibv_cq *cq, const xp_wc *e, const char *what)
{
	struct ibv_wc wc;

	if (xp_wait_wc(s, cq, &wc, what))
		return -1;
	xp_check(s, wc_matches(&wc, e),
		 "%s: completion {status %s, wr_id 0x%llx, opcode %d, byte_len %u, wc_flags 0x%x, "
		 "imm 0x%x, qp 0x%x}, want {%s, 0x%llx, %d, %d, %s 0x%x, 0x%x}",
		 what, ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, wc.opcode,
		 wc.byte_len, wc.wc_flags, be32toh(wc.imm_data), wc.qp_num,
		 ibv_wc_status_str(e->status), (unsigned long long)e->wr_id, e->opcode,
		 (int)e->byte_len, e->with_imm == 1 ? "imm" : "no imm", e->imm, e->qp_num);
	/* After an unexpected status everything that follows is a flush. */
	return wc.status == e->status ? 0 : -1;
}

int xp_post_chain(xside *s, struct ibv_qp *qp, struct ibv_send_wr *wr, int n, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	for (int i = 0; i < n; i++)
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	rc = ibv_post_send(qp, wr, &bad);
	if (rc)
		xp_fail(s, "%s: ibv_post_send of %d WRs: %s (%d), bad WR %ld", what, n,
			strerror(rc), rc, bad ? (long)(bad - wr) : -1L);
	return rc ? -1 : 0;
}

/* The wr_id of message m of phase ph. */
static uint64_t wrid(const xside *s, int ph, int m)
{
	return (uint64_t)ph << 32 | (uint64_t)s->iter << 16 | (uint64_t)m;
}

/* The immediate of message m that side id sends. */
static uint32_t imm_of(int iter, int id, int m)
{
	return (uint32_t)seed_of(iter, id, 99, m);
}

/* The WR of message mm of phase ph on s, its gather (or for a read, its
 * scatter) list in sg; the source pieces filled with s's pattern. */
static void build_wr(xside *s, int ph, const msg *mm, struct ibv_send_wr *wr, struct ibv_sge *sg)
{
	uint64_t seed = seed_of(s->iter, s->id, ph, mm->m);
	uint32_t base = ph == PH_READ ? XP_RDST : XP_SRC;

	memset(wr, 0, sizeof(*wr));
	for (int j = 0; j < mm->nsge; j++) {
		uint32_t at, len, lo;

		piece(mm, mm->nsge, j, &at, &len, &lo);
		if (ph != PH_READ)
			pat_fill(s->buf + base + at, lo, len, seed);
		sg[j] = (struct ibv_sge){ (uintptr_t)s->buf + base + at, len, s->mr->lkey };
	}
	wr->wr_id = wrid(s, ph, mm->m);
	wr->sg_list = sg;
	wr->num_sge = mm->nsge;
	wr->send_flags = (mm->sig ? IBV_SEND_SIGNALED : 0) |
			 (mm->inl && ph != PH_READ ? IBV_SEND_INLINE : 0);
	wr->opcode = ph == PH_WRITE || ph == PH_SANITY ? IBV_WR_RDMA_WRITE
		     : ph == PH_WIMM			 ? IBV_WR_RDMA_WRITE_WITH_IMM
		     : ph == PH_READ			 ? IBV_WR_RDMA_READ
		     : mm->m % 2			 ? IBV_WR_SEND_WITH_IMM
							 : IBV_WR_SEND;
	wr->imm_data = htobe32(imm_of(s->iter, s->id, mm->m));
	wr->wr.rdma.rkey = s->peer.rkey;
	wr->wr.rdma.remote_addr = s->peer.addr + (ph == PH_READ ? XP_RSRC : XP_DST) + mm->off;
}

/* The initiator's completion of mm. */
static xp_wc send_wc(const xside *s, int ph, const msg *mm, struct ibv_qp *qp)
{
	return (xp_wc){ .wr_id = wrid(s, ph, mm->m), .status = IBV_WC_SUCCESS,
			.opcode = ph == PH_READ			  ? IBV_WC_RDMA_READ
				  : ph == PH_SEND || ph == PH_SRQ ? IBV_WC_SEND
								  : IBV_WC_RDMA_WRITE,
			.byte_len = ph == PH_READ ? mm->size : UINT32_MAX,
			.qp_num = qp->qp_num, .with_imm = -1 };
}

/* Posts p's n messages of phase ph on qp in chains of XP_BATCH, each
 * chain's completions awaited and checked. An inline source is cleared
 * right after its post (the WQE holds the copy). 0 or -1. */
static int send_msgs(xside *s, int ph, const msg *p, int n, struct ibv_qp *qp)
{
	for (int b = 0; b < n; b += XP_BATCH) {
		struct ibv_send_wr wr[XP_BATCH];
		struct ibv_sge sg[XP_BATCH][XP_SGE];
		int k = n - b < XP_BATCH ? n - b : XP_BATCH;

		for (int i = 0; i < k; i++)
			build_wr(s, ph, &p[b + i], &wr[i], sg[i]);
		if (xp_post_chain(s, qp, wr, k, phase_name[ph]))
			return -1;
		for (int i = 0; i < k; i++)
			for (int j = 0; wr[i].send_flags & IBV_SEND_INLINE && j < wr[i].num_sge; j++)
				memset((void *)(uintptr_t)sg[i][j].addr, 0, sg[i][j].length);
		for (int i = 0; i < k; i++) {
			xp_wc e = send_wc(s, ph, &p[b + i], qp);
			char what[64];

			snprintf(what, sizeof(what), "%s message %d", phase_name[ph], b + i);
			if (p[b + i].sig && xp_expect(s, s->scq, &e, what))
				return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Receives. */

/* Posts one receive of nsge entries (sg) on qp, or on the SRQ when qp is
 * NULL. 0 or -1. */
static int post_recv(xside *s, struct ibv_qp *qp, uint64_t id, struct ibv_sge *sg, int nsge)
{
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = nsge }, *bad = NULL;
	int rc = qp ? ibv_post_recv(qp, &wr, &bad) : ibv_post_srq_recv(s->srq, &wr, &bad);

	if (rc)
		xp_fail(s, "ibv_post_%srecv of %d entries: %s (%d)", qp ? "" : "srq_", nsge,
			strerror(rc), rc);
	return rc ? -1 : 0;
}

/* The receives of phase ph for p: write-imm takes 0 or 1 entry; a send is
 * scattered over mm->rsge pieces of RBUF, the last 32 bytes longer than
 * the message; the SRQ takes one SRQ_SLOT each. 0 or -1. */
static int post_recvs(xside *s, int ph, const msg *p, int n)
{
	for (int m = 0; m < n; m++) {
		struct ibv_sge sg[XP_SGE];
		int k = ph == PH_WIMM ? m % 2 : ph == PH_SRQ ? 1 : p[m].rsge;

		for (int j = 0; j < k; j++) {
			uint32_t at, len, lo;

			piece(&p[m], k, j, &at, &len, &lo);
			if (ph == PH_SRQ)
				at = (uint32_t)m * SRQ_SLOT, len = SRQ_SLOT;
			else if (j == k - 1)
				len += 32;
			sg[j] = (struct ibv_sge){ (uintptr_t)s->buf + XP_RBUF + at, len, s->mr->lkey };
		}
		if (post_recv(s, ph == PH_SRQ ? NULL : s->qp, wrid(s, ph, m) | 1ull << 31, sg, k))
			return -1;
	}
	return 0;
}

/* The receive completion of the peer's message mm, and its payload. */
static int check_recv(xside *s, int ph, const msg *mm)
{
	int peer = !s->id, imm = ph == PH_WIMM || mm->m % 2;
	xp_wc e = { .wr_id = wrid(s, ph, mm->m) | 1ull << 31, .status = IBV_WC_SUCCESS,
		    .opcode = ph == PH_WIMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		    .byte_len = mm->size, .qp_num = ph == PH_SRQ ? s->sqp->qp_num : s->qp->qp_num,
		    .with_imm = imm, .imm = imm ? imm_of(s->iter, peer, mm->m) : 0 };
	uint64_t seed = seed_of(s->iter, peer, ph, mm->m);
	char what[64];
	msg slot = *mm;

	snprintf(what, sizeof(what), "%s receive %d", phase_name[ph], mm->m);
	if (xp_expect(s, s->rcq, &e, what))
		return -1;
	if (ph == PH_WIMM)
		check_msg(s, s->buf + XP_DST, mm, 1, seed, "write-imm target");
	else if (ph == PH_SEND)
		check_msg(s, s->buf + XP_RBUF, mm, mm->rsge, seed, "send receive");
	else {
		slot.off = (uint32_t)mm->m * SRQ_SLOT;
		check_msg(s, s->buf + XP_RBUF, &slot, 1, seed, "SRQ receive");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Phases. */

/* The step tag of phase ph's step st in this iteration. */
static uint32_t tag(const xside *s, int ph, int st)
{
	return (uint32_t)s->iter << 8 | (uint32_t)ph << 4 | (uint32_t)st;
}

/* RDMA WRITE of p's n messages into each other's DST, checked there. */
static int phase_write(xside *s, int ph, const msg *p, int n, uint32_t used)
{
	peer_mem_begin();
	memset(s->buf + XP_DST, XP_CANARY, used);
	peer_mem_end();
	if (xp_sync(s, tag(s, ph, 1)) || send_msgs(s, ph, p, n, s->qp) || xp_sync(s, tag(s, ph, 2)))
		return -1;
	peer_mem_begin();
	for (int m = 0; m < n; m++)
		check_msg(s, s->buf + XP_DST, &p[m], 1, seed_of(s->iter, !s->id, ph, m),
			  "write target");
	peer_mem_end();
	return 0;
}

/* WRITE_WITH_IMM, SEND/SEND_WITH_IMM or the same through the SRQ: the
 * receives posted, then both sides send, then each checks what it got. */
static int phase_recv(xside *s, int ph, const msg *p, int n, uint32_t used)
{
	memset(s->buf + (ph == PH_WIMM ? XP_DST : XP_RBUF), XP_CANARY,
	       ph == PH_SRQ ? (uint32_t)n * SRQ_SLOT : used);
	if (post_recvs(s, ph, p, n) || xp_sync(s, tag(s, ph, 1)) ||
	    send_msgs(s, ph, p, n, ph == PH_SRQ ? s->sqp : s->qp))
		return -1;
	for (int m = 0; m < n; m++)
		if (check_recv(s, ph, &p[m]))
			return -1;
	return 0;
}

/* RDMA READ of the peer's RSRC (its own pattern) into RDST pieces. */
static int phase_read(xside *s, const msg *p, int n, uint32_t used)
{
	peer_mem_begin();
	for (int m = 0; m < n; m++)
		pat_fill(s->buf + XP_RSRC + p[m].off, 0, p[m].size,
			 seed_of(s->iter, s->id, PH_READ, m));
	peer_mem_end();
	memset(s->buf + XP_RDST, XP_CANARY, used);
	if (xp_sync(s, tag(s, PH_READ, 1)) || send_msgs(s, PH_READ, p, n, s->qp))
		return -1;
	for (int m = 0; m < n; m++)
		check_msg(s, s->buf + XP_RDST, &p[m], p[m].nsge,
			  seed_of(s->iter, !s->id, PH_READ, m), "read");
	return 0;
}

/* One atomic operation of the plan: on counter j, compare-swap or
 * fetch-add, and the value it must fetch. */
typedef struct aop {
	int j, cs;
	uint64_t cmp_add, swap, old;
} aop;

/* The operations on side id's counters in iteration iter (ops, their
 * count returned) and the counters' final values. Even counters: two
 * fetch-adds. Odd: a compare-swap that succeeds, one that fails (stale
 * compare), a fetch-add. */
static int atom_plan(int iter, int id, aop *ops, uint64_t *init, uint64_t *final)
{
	int n = 0;

	for (int j = 0; j < NATOM; j++) {
		uint64_t v0 = seed_of(iter, id, PH_ATOM, j), a = mix64(v0), b = mix64(a);

		init[j] = v0;
		if (j % 2 == 0) {
			ops[n++] = (aop){ j, 0, a, 0, v0 };
			ops[n++] = (aop){ j, 0, b, 0, v0 + a };
			final[j] = v0 + a + b;
		} else {
			ops[n++] = (aop){ j, 1, v0, a, v0 };
			ops[n++] = (aop){ j, 1, v0, b, a };
			ops[n++] = (aop){ j, 0, b, 0, a };
			final[j] = a + b;
		}
	}
	return n;
}

/* The WR of operation i of ops on the peer's counters, its result in
 * RESULTS slot i; every third unsignaled, as the chain's last is not. */
static void atom_wr(xside *s, const aop *o, int i, int last, struct ibv_send_wr *wr,
		    struct ibv_sge *sg)
{
	*sg = (struct ibv_sge){ (uintptr_t)s->buf + XP_RESULTS + 8u * (unsigned)i, 8, s->mr->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wrid(s, PH_ATOM, i);
	wr->sg_list = sg;
	wr->num_sge = 1;
	wr->opcode = o->cs ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr->send_flags = i % 3 != 2 || last ? IBV_SEND_SIGNALED : 0;
	wr->wr.atomic.remote_addr = s->peer.addr + XP_ATOMS + 8u * (unsigned)o->j;
	wr->wr.atomic.rkey = s->peer.rkey;
	wr->wr.atomic.compare_add = o->cmp_add;
	wr->wr.atomic.swap = o->swap;
}

/* Posts ops in chains, awaits the signaled ones, checks every fetched value. */
static int atom_post(xside *s, const aop *ops, int n)
{
	struct ibv_send_wr wr[XP_BATCH];
	struct ibv_sge sg[XP_BATCH];

	memset(s->buf + XP_RESULTS, XP_CANARY, 8u * MAXOPS);
	for (int b = 0; b < n; b += XP_BATCH) {
		int k = n - b < XP_BATCH ? n - b : XP_BATCH;

		for (int i = 0; i < k; i++)
			atom_wr(s, &ops[b + i], b + i, i == k - 1, &wr[i], &sg[i]);
		if (xp_post_chain(s, s->qp, wr, k, "atomics"))
			return -1;
		for (int i = 0; i < k; i++) {
			xp_wc e = { wr[i].wr_id, IBV_WC_SUCCESS,
				    ops[b + i].cs ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, 8,
				    s->qp->qp_num, -1, 0 };

			if ((wr[i].send_flags & IBV_SEND_SIGNALED) &&
			    xp_expect(s, s->scq, &e, "atomic"))
				return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, s->buf + XP_RESULTS + 8 * i, 8);
		xp_check(s, v == ops[i].old, "atomic %d (%s on counter %d) fetched 0x%llx, want 0x%llx",
			 i, ops[i].cs ? "compare-swap" : "fetch-add", ops[i].j,
			 (unsigned long long)v, (unsigned long long)ops[i].old);
	}
	return 0;
}

/* Both sides' counters set, the peer's operated on, then each checks its own. */
static int phase_atom(xside *s)
{
	aop ops[MAXOPS];
	uint64_t init[NATOM], final[NATOM], pinit[NATOM], pfinal[NATOM];
	int n;

	atom_plan(s->iter, s->id, ops, init, final);
	peer_mem_begin();
	memcpy(s->buf + XP_ATOMS, init, sizeof(init));
	peer_mem_end();
	n = atom_plan(s->iter, !s->id, ops, pinit, pfinal);
	if (xp_sync(s, tag(s, PH_ATOM, 1)) || atom_post(s, ops, n) || xp_sync(s, tag(s, PH_ATOM, 2)))
		return -1;
	for (int j = 0; j < NATOM; j++) {
		uint64_t v;

		peer_mem_begin();
		memcpy(&v, s->buf + XP_ATOMS + 8 * j, 8);
		peer_mem_end();
		xp_check(s, v == final[j], "counter %d holds 0x%llx after the peer's atomics, "
					   "want 0x%llx",
			 j, (unsigned long long)v, (unsigned long long)final[j]);
	}
	return 0;
}

/* Every phase of one iteration, both directions. */
static int run_iteration(xside *s)
{
	msg p[NMSG], q[NSRQ];
	uint32_t used = plan(p, sizes, NMSG, s->iter, s->max_inline);

	plan(q, srq_sizes, NSRQ, s->iter, s->max_inline);
	s->phase = phase_name[PH_WRITE];
	if (phase_write(s, PH_WRITE, p, NMSG, used))
		return -1;
	for (int ph = PH_WIMM; ph <= PH_SRQ; ph++) {
		s->phase = phase_name[ph];
		if (phase_recv(s, ph, ph == PH_SRQ ? q : p, ph == PH_SRQ ? NSRQ : NMSG, used))
			return -1;
	}
	s->phase = phase_name[PH_READ];
	if (phase_read(s, p, NMSG, used))
		return -1;
	s->phase = phase_name[PH_ATOM];
	return phase_atom(s);
}

int xp_run_cases(xside *s)
{
	double t0 = xp_now();

	for (s->iter = 1; s->iter <= s->iters; s->iter++)
		if (run_iteration(s))
			return -1;
	s->phase = NULL;
	printf("gic-emu-xproc[%s]: %d iterations of write, write-imm, send, send-srq, read, "
	       "atomics (1 B to 4 MiB, both directions) in %.2f s\n",
	       s->name, s->iters, xp_now() - t0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Peer death. */

int xp_sanity(xside *s)
{
	static const uint32_t sz[1] = { 4096 };
	msg p[1];
	uint32_t used = plan(p, sz, 1, 0, 0);

	s->phase = phase_name[PH_SANITY];
	return phase_write(s, PH_SANITY, p, 1, used);
}

/* The survivor's WQEs at the kill: receives on its QP, then 16 writes of
 * 256 KiB and 8 sends the peer never receives (RNR, retried forever). The
 * send WR ids in posting order in ids. 0 or -1. */
static int post_outstanding(xside *s, uint64_t *ids, int *n)
{
	struct ibv_send_wr wr[XP_BATCH];
	struct ibv_sge sg[XP_BATCH], rs = { (uintptr_t)s->buf + XP_RBUF, 4096, s->mr->lkey };

	for (int i = 0; i < 8; i++)
		if (post_recv(s, s->qp, 0xd000 + (uint64_t)i, &rs, 1))
			return -1;
	*n = 0;
	for (int b = 0; b < 3; b++) {
		for (int i = 0; i < XP_BATCH; i++) {
			int send = b == 2;

			sg[i] = (struct ibv_sge){ (uintptr_t)s->buf + XP_SRC + (uint32_t)i * (256u << 10),
						  send ? 4096 : 256u << 10, s->mr->lkey };
			memset(&wr[i], 0, sizeof(wr[i]));
			wr[i].wr_id = ids[(*n)++] = (send ? 0xf000 : 0xe000) + (uint64_t)(b * 8 + i);
			wr[i].sg_list = &sg[i];
			wr[i].num_sge = 1;
			wr[i].opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			wr[i].wr.rdma.rkey = s->peer.rkey;
			wr[i].wr.rdma.remote_addr = s->peer.addr + XP_DST + sg[i].addr - (uintptr_t)s->buf;
		}
		if (xp_post_chain(s, s->qp, wr, XP_BATCH, "outstanding WQEs"))
			return -1;
	}
	return 0;
}

/* The peer killed with SIGKILL: by this side when it started the peer,
 * else by the peer itself on this side's order. */
static void kill_peer(xside *s)
{
	if (s->child > 0)
		kill(s->child, SIGKILL);
	else if (xp_tag_out(s, 0xdead))
		xp_fail(s, "sending the kill order: %s", strerror(errno));
}

/* The send completions after the kill: writes may succeed first (sends
 * cannot), then one error that is not a flush, then only flushes; in
 * posting order, within the limits. The index of the error, or -1. */
static int death_completions(xside *s, const uint64_t *ids, int n, double t_kill)
{
	struct ibv_wc wc;
	int err = -1;

	for (int i = 0; i < n; i++) {
		if (xp_wait_wc(s, s->scq, &wc, err < 0 ? "after the peer's death: no error" : "flush"))
			return -1;
		xp_check(s, wc.wr_id == ids[i] && wc.qp_num == s->qp->qp_num,
			 "completion %d: wr_id 0x%llx qp 0x%x, want 0x%llx qp 0x%x", i,
			 (unsigned long long)wc.wr_id, wc.qp_num, (unsigned long long)ids[i],
			 s->qp->qp_num);
		if (err < 0 && wc.status == IBV_WC_SUCCESS) {
			xp_check(s, ids[i] < 0xf000, "a send to the dead peer (wr_id 0x%llx) succeeded",
				 (unsigned long long)ids[i]);
		} else if (err < 0) {
			err = i;
			xp_check(s, wc.status != IBV_WC_WR_FLUSH_ERR,
				 "the first failed completion is a flush (no error before it)");
			printf("gic-emu-xproc[%s]: peer killed; WR %d failed with %s (vendor 0x%x) "
			       "after %.3f s\n",
			       s->name, i, ibv_wc_status_str(wc.status), wc.vendor_err,
			       xp_now() - t_kill);
		} else {
			xp_check(s, wc.status == IBV_WC_WR_FLUSH_ERR, "WR %d after the error: %s, "
								     "want a flush",
				 i, ibv_wc_status_str(wc.status));
		}
	}
	return xp_check(s, err >= 0, "no error completion after the peer's death") ? err : -1;
}

/* The receives flushed, the QP in ERR, a post into it flushed. 0 or -1. */
static int death_aftermath(xside *s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sg = { (uintptr_t)s->buf, 8, s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0xaf, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	xp_wc e = { .status = IBV_WC_WR_FLUSH_ERR, .qp_num = s->qp->qp_num };

	for (int i = 0; i < 8; i++) {
		e.wr_id = 0xd000 + (uint64_t)i;
		if (xp_expect(s, s->rcq, &e, "a posted receive after the peer's death"))
			return -1;
	}
	xp_check(s, ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR,
		 "the QP is not in ERR after the peer's death (state %d)", a.qp_state);
	wr.wr.rdma.rkey = s->peer.rkey;
	wr.wr.rdma.remote_addr = s->peer.addr + XP_DST;
	e.wr_id = 0xaf;
	return xp_post_chain(s, s->qp, &wr, 1, "a post into the QP in ERR") ||
	       xp_expect(s, s->scq, &e, "a post into the QP in ERR");
}

/* The SRQ QP had nothing posted at the death: its next send must fail.
 * A ConnectX's would fail with an error after its retries; a flush is
 * accepted only when the QP already showed ERR (the emulated wire puts an
 * idle QP in error at the death, so that receives flush). 0 or -1. */
static int death_idle_qp(xside *s)
{
	struct ibv_sge sg = { (uintptr_t)s->buf, 64, s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x1d1e, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;

	ibv_query_qp(s->sqp, &a, IBV_QP_STATE, &ia);
	if (xp_post_chain(s, s->sqp, &wr, 1, "a send on the idle QP toward the dead peer") ||
	    xp_wait_wc(s, s->scq, &wc, "a send on the idle QP toward the dead peer"))
		return -1;
	xp_check(s, wc.wr_id == 0x1d1e && wc.status != IBV_WC_SUCCESS &&
			    (wc.status != IBV_WC_WR_FLUSH_ERR || a.qp_state == IBV_QPS_ERR),
		 "a send on the idle QP toward the dead peer (state %d before it): %s (wr_id "
		 "0x%llx), want an error, or a flush of a QP already in ERR",
		 a.qp_state, ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	printf("gic-emu-xproc[%s]: a send on the idle QP toward the dead peer (%s before it): %s\n",
	       s->name, a.qp_state == IBV_QPS_ERR ? "in ERR" : "not in ERR",
	       ibv_wc_status_str(wc.status));
	return 0;
}

int xp_survive(xside *s)
{
	uint64_t ids[3 * XP_BATCH];
	int n, err;
	double t;

	s->phase = phase_name[PH_DEATH];
	if (post_outstanding(s, ids, &n))
		return -1;
	usleep(50000); /* the writes under way, the sends in RNR */
	kill_peer(s);
	t = xp_now();
	err = death_completions(s, ids, n, t);
	if (err < 0 || death_aftermath(s) || death_idle_qp(s))
		return -1;
	printf("gic-emu-xproc[%s]: %d writes completed, 1 error, %d send and 8 receive flushes, "
	       "1 flush of a post in ERR, all within %.3f s of the kill\n",
	       s->name, err, n - err - 1, xp_now() - t);
	return 0;
}

int xp_await_death(xside *s)
{
	uint32_t t = 0;

	s->phase = phase_name[PH_DEATH];
	if (xp_tag_in(s, &t, s->limit_s * 6)) {
		xp_fail(s, "no kill order from the survivor: %s", strerror(errno));
		return -1;
	}
	if (t == 0xdead) {
		printf("gic-emu-xproc[%s]: killing myself (SIGKILL) as ordered\n", s->name);
		raise(SIGKILL);
	}
	xp_fail(s, "unexpected tag 0x%x instead of the kill order", t);
	return -1;
}
