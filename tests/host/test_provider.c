/*
 * The provider interface (gic/provider.h) end to end on softnic: two PEs
 * open, register, create, exchange connection records (wire format),
 * connect, post chains of writes and an atomic through the host post
 * path, poll, and check every byte that arrived; plus the interface's
 * error paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gic/provider.h"
#include "gic/softnic.h"
#include "testkit.h"

enum { REGION = 1 << 16 };

typedef struct pe {
	gic_nic *nic;
	gic_nic_cq *cq;
	gic_nic_qp *qp;
	gic_nic_mr *mr;
	uint8_t *buf;
	gic_conn_info me;
} pe;

static int pe_open(pe *p, gic_nic *share)
{
	gic_nic_attr a = { .engine_threads = 1, .share = share };
	char err[GIC_NIC_ERR_LEN] = "";
	gic_qp_attr qa = { .log_sq_bb = 6 };

	memset(p, 0, sizeof(*p));
	p->nic = gic_nic_open(&gic_provider_softnic, &a, err, sizeof(err));
	if (!p->nic) {
		fprintf(stderr, "open: %s\n", err);
		return errno;
	}
	p->buf = calloc(1, REGION);
	p->mr = p->buf ? gic_nic_reg_mr(p->nic, p->buf, REGION, GIC_ACCESS_ALL) : NULL;
	p->cq = p->mr ? gic_nic_cq_create(p->nic, 6) : NULL;
	qa.send_cq = p->cq;
	p->qp = p->cq ? gic_nic_qp_create(p->nic, &qa) : NULL;
	if (!p->qp || gic_nic_qp_local(p->qp, &p->me)) {
		fprintf(stderr, "setup: %s\n", gic_nic_error(p->nic));
		return EIO;
	}
	p->me.addr = (uint64_t)(uintptr_t)p->buf;
	p->me.rkey = p->mr->rkey;
	return 0;
}

static void pe_close(pe *p)
{
	CHECK(gic_nic_qp_destroy(p->qp) == 0, "qp destroy: %s", gic_nic_error(p->nic));
	CHECK(gic_nic_cq_destroy(p->cq) == 0, "cq destroy");
	CHECK(gic_nic_dereg_mr(p->mr) == 0, "dereg");
	gic_nic_close(p->nic);
	free(p->buf);
}

/* Records go through the wire format, as a bootstrap would carry them. */
static int exchange(pe *a, pe *b, gic_conn_info *ra, gic_conn_info *rb)
{
	uint8_t wa[GIC_CONN_WIRE_BYTES], wb[GIC_CONN_WIRE_BYTES];

	if (gic_conn_pack(&a->me, wa, sizeof(wa)) || gic_conn_pack(&b->me, wb, sizeof(wb)))
		return EINVAL;
	return gic_conn_unpack(wb, sizeof(wb), ra, NULL) || gic_conn_unpack(wa, sizeof(wa), rb, NULL)
		       ? EPROTO : 0;
}

static int poll_until(pe *p, gic_wc *wc, int want)
{
	uint64_t dl = tk_deadline();
	int got = 0;

	while (got < want) {
		int k, rc = gic_nic_poll(p->cq, wc + got, want - got, &k);

		if (rc)
			return rc;
		got += k;
		if (!k && gic_now_ns() > dl)
			return ETIMEDOUT;
	}
	return 0;
}

CASE(softnic_end_to_end)
{
	pe a, b;
	gic_conn_info peer_of_a, peer_of_b;
	gic_wr wr[GIC_POST_MAX_CHAIN];
	gic_wc wc[4];
	uint64_t *counter;
	int rc;

	REQUIRE(pe_open(&a, NULL) == 0, "PE 0");
	REQUIRE(pe_open(&b, a.nic) == 0, "PE 1 (sharing PE 0's softnic)");
	REQUIRE(exchange(&a, &b, &peer_of_a, &peer_of_b) == 0, "exchange");
	CHECK(gic_nic_qp_connect(a.qp, &a.me, &peer_of_a) == 0, "connect a: %s", gic_nic_error(a.nic));
	CHECK(gic_nic_qp_connect(b.qp, &b.me, &peer_of_b) == 0, "connect b: %s", gic_nic_error(b.nic));
	tk_fill(a.buf, REGION, 3);
	counter = (uint64_t *)(b.buf + REGION - 64);
	*counter = 1000;
	for (int round = 0; round < 50; round++) {
		/* 15 writes (pointer and inline) and a signaled fetch-add. */
		for (int i = 0; i < 15; i++) {
			uint64_t off = ((uint64_t)round * 15 + (uint64_t)i) * 64 % (REGION - 4096);

			wr[i] = (gic_wr){ .wr_id = (uint64_t)i, .op = GIC_WR_WRITE,
					  .inline_data = i % 3 == 0, .len = i % 3 == 0 ? 32 : 64,
					  .laddr = (uint64_t)(uintptr_t)(a.buf + off),
					  .lkey = a.mr->lkey, .raddr = peer_of_a.addr + off,
					  .rkey = peer_of_a.rkey };
		}
		wr[15] = (gic_wr){ .wr_id = 7000 + (uint64_t)round, .op = GIC_WR_ATOMIC_FA,
				   .signaled = 1,
				   .laddr = (uint64_t)(uintptr_t)(a.buf + REGION - 8),
				   .lkey = a.mr->lkey, .raddr = peer_of_a.addr + REGION - 64,
				   .rkey = peer_of_a.rkey, .add = 1 };
		rc = gic_nic_post(a.qp, wr, GIC_POST_MAX_CHAIN);
		REQUIRE(rc == 0, "post round %d: %s", round, gic_nic_error(a.nic));
		rc = poll_until(&a, wc, 1);
		REQUIRE(rc == 0, "poll round %d: %s (%s)", round, strerror(rc), gic_nic_error(a.nic));
		CHECK(wc[0].status == 0 && wc[0].wr_id == 7000 + (uint64_t)round &&
		      wc[0].qpn == a.qp->qpn, "completion %d: status %u wr_id %llu", round,
		      wc[0].status, (unsigned long long)wc[0].wr_id);
		CHECK(*(uint64_t *)(a.buf + REGION - 8) == 1000 + (uint64_t)round,
		      "fetched value %d", round);
		for (int i = 0; i < 15; i++) {
			uint64_t off = ((uint64_t)round * 15 + (uint64_t)i) * 64 % (REGION - 4096);

			CHECK(!memcmp(a.buf + off, b.buf + off, i % 3 == 0 ? 32 : 64),
			      "payload round %d write %d", round, i);
		}
	}
	CHECK(*counter == 1050, "counter %llu", (unsigned long long)*counter);
	CHECK(gic_nic_cq_destroy(a.cq) == EBUSY, "a CQ in use is not destroyed");
	pe_close(&b);
	pe_close(&a);
}

CASE(views_and_ring_full)
{
	pe a, b;
	gic_conn_info ra, rb;
	gic_sq sq;
	gic_cq cq;
	gic_wr w = { .op = GIC_WR_WRITE, .len = 8 };
	gic_wc wc[64];
	int posted = 0, rc, got = -1;

	REQUIRE(pe_open(&a, NULL) == 0 && pe_open(&b, a.nic) == 0, "PEs");
	REQUIRE(exchange(&a, &b, &ra, &rb) == 0, "exchange");
	REQUIRE(gic_nic_qp_connect(a.qp, &a.me, &ra) == 0 && gic_nic_qp_connect(b.qp, &b.me, &rb) == 0,
		"connect");
	CHECK(gic_nic_qp_connect(a.qp, &a.me, &ra) == 0, "connecting again to the same peer");
	REQUIRE(gic_nic_qp_view(b.qp, GIC_VIEW_DEVICE, &sq, &cq) == 0, "view");
	CHECK(sq.qpn == b.qp->qpn && sq.bb_cnt == 64 && sq.cq == &cq && cq.cqe_cnt == 64, "view");
	w.laddr = (uint64_t)(uintptr_t)a.buf;
	w.lkey = a.mr->lkey;
	w.raddr = ra.addr;
	w.rkey = ra.rkey;
	/* Fill the 64-BB ring with unsignaled writes: the next post is refused. */
	do {
		rc = gic_nic_post(a.qp, &w, 1);
		posted += !rc;
	} while (!rc && posted < 1000);
	CHECK(rc == ENOBUFS && posted == 64 && strstr(gic_nic_error(a.nic), "full"),
	      "ring full after %d: %d '%s'", posted, rc, gic_nic_error(a.nic));
	CHECK(gic_nic_post(a.qp, &w, 0) == EINVAL && gic_nic_post(a.qp, &w, 17) == EINVAL, "count");
	w.inline_data = 1;
	w.len = 4096;
	CHECK(gic_nic_post(a.qp, &w, 1) == EINVAL, "inline above max");
	CHECK(gic_nic_poll(a.cq, wc, 64, &got) == 0 && got == 0, "nothing signaled: no completion");
	CHECK(gic_nic_poll(a.cq, NULL, 64, &got) == EINVAL && got == 0, "poll into NULL");
	pe_close(&b);
	pe_close(&a);
}

CASE(error_completion)
{
	pe a, b;
	gic_conn_info ra, rb;
	gic_wr w;
	gic_wc wc[2];

	REQUIRE(pe_open(&a, NULL) == 0 && pe_open(&b, a.nic) == 0, "PEs");
	REQUIRE(exchange(&a, &b, &ra, &rb) == 0, "exchange");
	REQUIRE(gic_nic_qp_connect(a.qp, &a.me, &ra) == 0 && gic_nic_qp_connect(b.qp, &b.me, &rb) == 0,
		"connect");
	w = (gic_wr){ .wr_id = 5, .op = GIC_WR_WRITE, .signaled = 1, .len = 64,
		      .laddr = (uint64_t)(uintptr_t)a.buf, .lkey = a.mr->lkey,
		      .raddr = ra.addr + REGION - 8, .rkey = ra.rkey }; /* past the region */
	REQUIRE(gic_nic_post(a.qp, &w, 1) == 0, "post");
	REQUIRE(poll_until(&a, wc, 1) == 0, "poll");
	CHECK(wc[0].wr_id == 5 && wc[0].status == GIC_SYND_REMOTE_ACCESS_ERR && wc[0].vendor_syndrome,
	      "remote access error: status 0x%x vendor 0x%x", wc[0].status, wc[0].vendor_syndrome);
	CHECK(strstr(gic_nic_error(a.nic), "remote access"), "error text '%s'", gic_nic_error(a.nic));
	pe_close(&b);
	pe_close(&a);
}

CASE(interface_errors)
{
	gic_nic_attr a = { 0 };
	char err[GIC_NIC_ERR_LEN] = "";
	gic_nic *n = gic_nic_open(&gic_provider_softnic, &a, err, sizeof(err));
	gic_qp_attr qa = { .log_sq_bb = 6 };
	gic_conn_info r = { .qpn = 0xfffff, .mtu = 5 };
	gic_nic_cq *cq;
	gic_nic_qp *qp;

	REQUIRE(n, "open: %s", err);
	errno = 0;
	CHECK(!gic_nic_qp_create(n, &qa) && errno == EINVAL, "QP without a CQ");
	CHECK(!gic_nic_reg_mr(n, NULL, 8, GIC_ACCESS_ALL) && errno, "register NULL");
	cq = gic_nic_cq_create(n, 4);
	REQUIRE(cq, "cq");
	qa.send_cq = cq;
	qp = gic_nic_qp_create(n, &qa);
	REQUIRE(qp, "qp");
	CHECK(!gic_nic_qp_create(n, &qa) && errno == EBUSY, "one QP per CQ");
	CHECK(gic_nic_qp_connect(qp, NULL, &r) == ENOENT && strstr(gic_nic_error(n), "no QP"),
	      "connect to an unknown QP: '%s'", gic_nic_error(n));
	CHECK(gic_nic_qp_destroy(qp) == 0 && gic_nic_cq_destroy(cq) == 0, "destroy");
	CHECK(gic_nic_qp_destroy(NULL) == 0 && gic_nic_cq_destroy(NULL) == 0 &&
	      gic_nic_dereg_mr(NULL) == 0, "NULL objects");
	gic_nic_close(n);
	gic_nic_close(NULL);
}

/* DC through the interface: PE b's DCT, PE a's DCI posting through its
 * view with the compact and the full address vector of that DCT (from
 * its connection record), each write landing in b's region; and what a
 * DC QP refuses (connect, a DCT's view, the host post path). */
CASE(dc_through_provider)
{
	pe a, b;
	gic_qp_attr da = { .log_sq_bb = 6, .type = GIC_QP_DCI };
	gic_qp_attr ta = { .log_sq_bb = 1, .type = GIC_QP_DCT };
	gic_nic_cq *dci_cq, *dct_cq;
	gic_nic_qp *dci, *dct;
	gic_conn_info rec;
	gic_av_seg av[2];
	gic_sq sq;
	gic_cq cqv;
	gic_wr wr = { .op = GIC_WR_WRITE, .len = 8 };

	REQUIRE(pe_open(&a, NULL) == 0, "PE a");
	REQUIRE(pe_open(&b, a.nic) == 0, "PE b");
	dci_cq = gic_nic_cq_create(a.nic, 6);
	dct_cq = gic_nic_cq_create(b.nic, 1);
	REQUIRE(dci_cq && dct_cq, "CQs");
	da.send_cq = dci_cq;
	ta.send_cq = dct_cq;
	dci = gic_nic_qp_create(a.nic, &da);
	dct = gic_nic_qp_create(b.nic, &ta);
	REQUIRE(dci && dct, "DCI and DCT: %s / %s", gic_nic_error(a.nic), gic_nic_error(b.nic));
	CHECK(dci->type == GIC_QP_DCI && dct->type == GIC_QP_DCT, "types");
	REQUIRE(gic_nic_qp_local(dct, &rec) == 0 && rec.qpn == dct->qpn, "DCT record");
	CHECK(gic_nic_dc_av(a.nic, &rec, 0, &av[0]) == 0 &&
	      gic_nic_dc_av(a.nic, &rec, 1, &av[1]) == 0, "address vectors");
	CHECK(!(gic_be32toh(av[0].dqp_dct_be) & GIC_EXTENDED_UD_AV) &&
	      (gic_be32toh(av[1].dqp_dct_be) & GIC_EXTENDED_UD_AV) &&
	      (gic_be32toh(av[1].dqp_dct_be) & 0xffffffu) == dct->qpn &&
	      gic_be64toh(av[0].dc_key_be) == GIC_DC_KEY, "AV forms, DCT number and key");
	REQUIRE(gic_nic_qp_view(dci, GIC_VIEW_HOST, &sq, &cqv) == 0, "DCI view");
	for (int full = 0; full < 2; full++) {
		uint64_t pos, v = 0x6463000000000001ull + (uint64_t)full, got;
		uint64_t raddr = (uint64_t)(uintptr_t)(b.buf + 64 * full);
		int rc = gic_sq_reserve_excl(&sq, full ? 2 : 1, &pos, GIC_ORDER_RELEASE_SYS,
					     tk_deadline());

		REQUIRE(rc == 0, "reserve: %d", rc);
		if (full)
			gic_wqe_dc_write_inline_u64_full(&sq, pos, &av[1], raddr, b.mr->rkey, v,
							 GIC_CTRL_CQ_UPDATE);
		else
			gic_wqe_dc_write_inline_u64(&sq, pos, &av[0], raddr, b.mr->rkey, v,
						    GIC_CTRL_CQ_UPDATE);
		gic_sq_note_signaled(&sq, pos + (full ? 2 : 1), 0);
		gic_sq_publish_excl(&sq, GIC_ORDER_RELEASE_SYS);
		rc = gic_sq_quiet(&sq, GIC_ORDER_RELEASE_SYS, tk_deadline());
		memcpy(&got, b.buf + 64 * full, 8);
		CHECK(rc == 0 && got == v, "%s AV write: rc %d, 0x%llx landed (%s)",
		      full ? "full" : "compact", rc, (unsigned long long)got, gic_nic_qp_error(dci));
	}
	CHECK(gic_nic_qp_connect(dci, &rec, &rec) == EINVAL &&
	      strstr(gic_nic_error(a.nic), "needs no connection"), "connect a DCI: '%s'",
	      gic_nic_error(a.nic));
	CHECK(gic_nic_qp_view(dct, GIC_VIEW_HOST, &sq, &cqv) == EINVAL, "a DCT's view");
	CHECK(gic_nic_post(dci, &wr, 1) == EINVAL, "host post on a DCI");
	CHECK(gic_nic_qp_error(dci)[0] == '\0', "no error recorded: '%s'", gic_nic_qp_error(dci));
	CHECK(gic_nic_qp_destroy(dci) == 0 && gic_nic_qp_destroy(dct) == 0, "destroy DC QPs");
	CHECK(gic_nic_cq_destroy(dci_cq) == 0 && gic_nic_cq_destroy(dct_cq) == 0, "destroy CQs");
	pe_close(&b);
	pe_close(&a);
}

/* A PE wrapped over a softnic the caller made: objects through the
 * interface, the caller's softnic and PD left alive on close. */
CASE(wrap_caller_softnic)
{
	softnic_attr sa = { .engine_threads = 1 };
	softnic *s = softnic_open(&sa);
	softnic_pd *pd = s ? softnic_pd_alloc(s) : NULL, *pd2 = s ? softnic_pd_alloc(s) : NULL;
	gic_nic *w, *w2, *bad;
	gic_nic_cq *cq;

	REQUIRE(pd && pd2, "softnic");
	w = gic_softnic_pe_wrap(s, pd, NULL);
	w2 = w ? gic_softnic_pe_wrap(s, pd2, w) : NULL;
	REQUIRE(w && w2, "wrap: %s", strerror(errno));
	CHECK(strstr(gic_nic_describe(w), "caller"), "describe: '%s'", gic_nic_describe(w));
	errno = 0;
	bad = gic_softnic_pe_wrap(NULL, pd, NULL);
	CHECK(!bad && errno == EINVAL, "NULL softnic");
	cq = gic_nic_cq_create(w, 4);
	CHECK(cq && gic_nic_cq_destroy(cq) == 0, "a CQ through the wrapped PE");
	gic_nic_close(w2);
	gic_nic_close(w);
	CHECK(softnic_pd_free(pd) == 0 && softnic_pd_free(pd2) == 0,
	      "the caller's PDs are still the caller's");
	softnic_close(s);
}

static const tk_case cases[] = {
	TK_ENTRY(softnic_end_to_end), TK_ENTRY(views_and_ring_full), TK_ENTRY(error_completion),
	TK_ENTRY(interface_errors), TK_ENTRY(dc_through_provider), TK_ENTRY(wrap_caller_softnic),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_provider", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
