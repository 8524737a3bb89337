/*
 * The in-process bootstrap, and the connection flow it serves: PEs
 * (threads) exchange connection records (gic/conn.h wire format), connect
 * their QPs by number, write into each other's regions, and check what
 * arrived.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gic/boot.h"
#include "gic/conn.h"
#include "testkit.h"

enum { SEC = 1000000000 };

typedef struct pe_job {
	gic_boot_group *g;
	int rank, rounds, rc;
	softnic *nic;
} pe_job;

static void *gather_rounds(void *arg)
{
	pe_job *j = arg;
	gic_boot *b = gic_boot_inproc(j->g, j->rank);
	uint64_t mine[2], all[2 * 8];

	if (!b) {
		j->rc = errno;
		return NULL;
	}
	for (int r = 0; r < j->rounds && !j->rc; r++) {
		mine[0] = (uint64_t)j->rank;
		mine[1] = (uint64_t)r * 1000 + (uint64_t)j->rank;
		j->rc = gic_boot_allgather(b, mine, sizeof(mine), all, 5ull * SEC);
		for (int p = 0; p < gic_boot_size(b) && !j->rc; p++)
			if (all[2 * p] != (uint64_t)p || all[2 * p + 1] != (uint64_t)r * 1000 + p)
				j->rc = EBADMSG;
	}
	gic_boot_free(b);
	return NULL;
}

CASE(allgather_rounds)
{
	enum { N = 8 };
	gic_boot_group *g = gic_boot_group_create(N);
	pthread_t t[N];
	pe_job jobs[N];

	REQUIRE(g, "group");
	for (int i = 0; i < N; i++) {
		jobs[i] = (pe_job){ .g = g, .rank = i, .rounds = 200 };
		pthread_create(&t[i], NULL, gather_rounds, &jobs[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		CHECK(jobs[i].rc == 0, "rank %d: %s", i, strerror(jobs[i].rc));
	}
	CHECK(gic_boot_group_destroy(g) == 0, "destroy");
}

CASE(missing_pe_times_out)
{
	gic_boot_group *g = gic_boot_group_create(2);
	gic_boot *b = g ? gic_boot_inproc(g, 0) : NULL;
	uint64_t t0;
	int rc;

	REQUIRE(b, "handle");
	t0 = gic_now_ns();
	rc = gic_boot_barrier(b, 50000000);
	CHECK(rc == ETIMEDOUT, "barrier without its peer: %d", rc);
	CHECK(gic_now_ns() - t0 >= 50000000 && gic_now_ns() - t0 < 5ull * SEC, "waited %llu ns",
	      (unsigned long long)(gic_now_ns() - t0));
	CHECK(strstr(gic_boot_last_error(b), "barrier") != NULL, "error text: '%s'",
	      gic_boot_last_error(b));
	CHECK(gic_boot_barrier(b, SEC) == ETIMEDOUT, "a failed group fails at once");
	gic_boot_free(b);
	CHECK(gic_boot_group_destroy(g) == 0, "destroy");
}

CASE(bad_arguments)
{
	gic_boot_group *g = gic_boot_group_create(2);
	gic_boot *b;

	REQUIRE(g, "group");
	errno = 0;
	CHECK(!gic_boot_group_create(1) && errno == EINVAL, "group of 1");
	CHECK(!gic_boot_inproc(g, 2) && errno == EINVAL, "rank out of range");
	b = gic_boot_inproc(g, 0);
	REQUIRE(b, "rank 0");
	CHECK(!gic_boot_inproc(g, 0) && errno == EBUSY, "rank taken twice");
	CHECK(gic_boot_group_destroy(g) == EBUSY, "destroy with a live handle");
	CHECK(gic_boot_rank(b) == 0 && gic_boot_size(b) == 2, "rank and size");
	CHECK(gic_boot_allgather(b, NULL, 8, b, SEC) == EINVAL, "NULL data");
	gic_boot_free(b);
	CHECK(gic_boot_group_destroy(g) == 0, "destroy");
}

/* ------------------------------------------------------------------ */
/* PEs connect through exchanged records and write to each other. */

enum { NPE = 4, WRITES = 256 };

typedef struct pe_state {
	softnic_pd *pd;
	uint64_t *region;         /* NPE * WRITES slots: slot [src][i] */
	softnic_mr *mr;
	softnic_qp *qp[NPE];      /* qp[j]: to PE j */
	gic_sq sq[NPE];
	gic_cq cq[NPE];
} pe_state;

static uint64_t value(int src, int dst, int i)
{
	return ((uint64_t)src << 48) | ((uint64_t)dst << 32) | (uint64_t)(i + 1);
}

/* Creates this PE's QPs and region and its NPE records: record j is for
 * PE j (the QP that will connect to j; the region j may write). */
static int pe_setup(pe_job *j, pe_state *s, uint8_t out[NPE][GIC_CONN_WIRE_BYTES])
{
	s->pd = softnic_pd_alloc(j->nic);
	s->region = calloc(NPE * WRITES, 8);
	s->mr = s->region ? softnic_reg_mr(s->pd, s->region, NPE * WRITES * 8,
					   SOFTNIC_ACCESS_REMOTE_WRITE) : NULL;
	if (!s->mr)
		return ENOMEM;
	for (int p = 0; p < NPE; p++) {
		softnic_qp_attr a = { .log_sq_bb = 9, .send_cq = softnic_cq_create(j->nic, 9) };
		gic_conn_info c = { .port = 1, .mtu = 5 };

		s->qp[p] = p == j->rank ? NULL : softnic_qp_create(s->pd, &a);
		if (p != j->rank && !s->qp[p])
			return ENOMEM;
		c.qpn = s->qp[p] ? softnic_qp_num(s->qp[p]) : 0;
		c.addr = (uint64_t)(uintptr_t)s->region;
		c.rkey = softnic_mr_rkey(s->mr);
		if (gic_conn_pack(&c, out[p], GIC_CONN_WIRE_BYTES))
			return EINVAL;
	}
	return 0;
}

/* Connects each pair (its lower rank does both sides, by the number the
 * peer sent) and keeps the peers' records. */
static int pe_connect(pe_job *j, pe_state *s, uint8_t (*all)[NPE][GIC_CONN_WIRE_BYTES],
		      gic_conn_info theirs[NPE])
{
	for (int p = 0; p < NPE; p++) {
		if (p == j->rank)
			continue;
		if (gic_conn_unpack(all[p][j->rank], GIC_CONN_WIRE_BYTES, &theirs[p], NULL))
			return EPROTO;
		if (j->rank < p &&
		    softnic_qp_connect(s->qp[p], softnic_qp_find(j->nic, theirs[p].qpn)))
			return ENOTCONN;
		softnic_qp_view(s->qp[p], &s->sq[p], &s->cq[p]);
	}
	return 0;
}

/* Writes WRITES values into every peer's region, slot [my rank][i]. */
static int pe_write_all(pe_job *j, pe_state *s, const gic_conn_info theirs[NPE])
{
	for (int p = 0; p < NPE; p++) {
		for (int i = 0; i < WRITES && p != j->rank; i++) {
			uint64_t pos, raddr = theirs[p].addr + 8 * ((uint64_t)j->rank * WRITES + i);
			int sig = i % 32 == 31;

			if (gic_sq_reserve_excl(&s->sq[p], 1, &pos, GIC_ORDER_RELEASE_SYS,
						gic_now_ns() + 5ull * SEC))
				return ETIMEDOUT;
			gic_wqe_write_inline_u64(&s->sq[p], pos, raddr, theirs[p].rkey,
						 value(j->rank, p, i), sig ? GIC_CTRL_CQ_UPDATE : 0);
			if (sig)
				gic_sq_note_signaled(&s->sq[p], pos + 1, 0);
			gic_sq_publish_excl(&s->sq[p], GIC_ORDER_RELEASE_SYS);
		}
	}
	return 0;
}

static int pe_check(const pe_job *j, const pe_state *s)
{
	for (int src = 0; src < NPE; src++)
		for (int i = 0; i < WRITES && src != j->rank; i++)
			if (s->region[src * WRITES + i] != value(src, j->rank, i))
				return EBADMSG;
	return 0;
}

static void *pe_main(void *arg)
{
	pe_job *j = arg;
	gic_boot *b = gic_boot_inproc(j->g, j->rank);
	/* Every PE's NPE records: gathered[from][for]. */
	uint8_t mine[NPE][GIC_CONN_WIRE_BYTES];
	gic_conn_info theirs[NPE];
	pe_state s;
	uint8_t (*gathered)[NPE][GIC_CONN_WIRE_BYTES] = malloc(NPE * sizeof(mine));

	memset(&s, 0, sizeof(s));
	j->rc = b && gathered ? pe_setup(j, &s, mine) : ENOMEM;
	if (!j->rc)
		j->rc = gic_boot_allgather(b, mine, sizeof(mine), gathered, 5ull * SEC);
	/* Everyone's QPs exist before anyone connects (the allgather), and
	 * every pair is connected before anyone writes (the barrier). */
	if (!j->rc)
		j->rc = pe_connect(j, &s, gathered, theirs);
	if (!j->rc)
		j->rc = gic_boot_barrier(b, 5ull * SEC);
	if (!j->rc)
		j->rc = pe_write_all(j, &s, theirs);
	for (int p = 0; p < NPE && !j->rc; p++)
		if (p != j->rank)
			j->rc = gic_sq_quiet(&s.sq[p], GIC_ORDER_RELEASE_SYS, gic_now_ns() + 5ull * SEC);
	/* Everyone's writes are complete before anyone checks. */
	if (!j->rc)
		j->rc = gic_boot_barrier(b, 5ull * SEC);
	if (!j->rc)
		j->rc = pe_check(j, &s);
	if (b)
		gic_boot_barrier(b, 5ull * SEC); /* the regions outlive every check */
	free(s.region);
	free(gathered);
	gic_boot_free(b);
	return NULL;
}

CASE(connect_by_records)
{
	softnic_attr na = { .engine_threads = 2 };
	gic_boot_group *g = gic_boot_group_create(NPE);
	softnic *nic = softnic_open(&na);
	pthread_t t[NPE];
	pe_job jobs[NPE];

	REQUIRE(g && nic, "group and softnic");
	for (int i = 0; i < NPE; i++) {
		jobs[i] = (pe_job){ .g = g, .rank = i, .nic = nic };
		pthread_create(&t[i], NULL, pe_main, &jobs[i]);
	}
	for (int i = 0; i < NPE; i++) {
		pthread_join(t[i], NULL);
		CHECK(jobs[i].rc == 0, "PE %d: %s", i, strerror(jobs[i].rc));
	}
	softnic_close(nic);
	CHECK(gic_boot_group_destroy(g) == 0, "destroy");
}

static const tk_case cases[] = {
	TK_ENTRY(allgather_rounds), TK_ENTRY(missing_pe_times_out), TK_ENTRY(bad_arguments),
	TK_ENTRY(connect_by_records),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_boot", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
