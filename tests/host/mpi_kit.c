/* mpi_kit: what the multi-process softnic tests share (see mpi_kit.h). */
#include "mpi_kit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mk_state mk = { .prog = "mpi test", .me = -1 };

void mk_init(const char *prog, uint64_t wait_ns, uint32_t slice, int natomic, size_t guard,
	     uint64_t salt)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mk.prog = prog;
	mk.wait_ns = wait_ns;
	mk.slice = slice;
	mk.natomic = natomic;
	mk.guard = guard;
	mk.salt = salt;
}

int mk_known_case(const char *name, const char *argv0, const char *const *cases)
{
	for (int i = 0; cases[i]; i++)
		if (!strcmp(name, cases[i]))
			return 1;
	fprintf(stderr, "usage: mpiexec -n N %s ", argv0);
	for (int i = 0; cases[i]; i++)
		fprintf(stderr, "%s%s", i ? "|" : "", cases[i]);
	fputc('\n', stderr);
	return 0;
}

void mk_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	mk.failures++;
	fprintf(stderr, "%s PE %d: %s:%d: ", mk.prog, mk.me, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *mk_cqe_text(uint8_t synd, uint8_t vs)
{
	static char buf[160];

	snprintf(buf, sizeof(buf), "syndrome 0x%02x (%s), vendor syndrome 0x%02x (%s)", synd,
		 gic_syndrome_name(synd), vs, softnic_vsynd_text(vs));
	return buf;
}

size_t mk_counter_off(void) { return (size_t)mk.npe * mk.slice; }

void mk_pattern(uint8_t *buf, size_t len, int src, int dst)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(src * 131 + dst + mk.salt);

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)(x | 1);
	}
}

gic_boot *mk_boot(int *argc, char ***argv, int maxpe, int *rc)
{
	gic_boot *b = gic_boot_mpi(argc, argv);

	if (!b) {
		*rc = errno;
		FAIL("gic_boot_mpi: %s", strerror(errno));
		return NULL;
	}
	mk.me = gic_boot_rank(b);
	mk.npe = gic_boot_size(b);
	if (mk.npe < 2 || mk.npe > maxpe) {
		FAIL("needs 2..%d processes (mpiexec -n N), got %d", maxpe, mk.npe);
		gic_boot_free(b);
		*rc = EINVAL;
		return NULL;
	}
	*rc = 0;
	return b;
}

softnic *mk_open(gic_boot *b, size_t arena)
{
	softnic_attr na;
	softnic *nic;

	memset(&na, 0, sizeof(na));
	na.engine_threads = 1;
	nic = softnic_open_shared(&na, b, arena, mk.wait_ns);
	if (!nic) {
		int e = errno;

		FAIL("softnic_open_shared: %s", strerror(e));
		errno = e;
	}
	return nic;
}

int mk_qp_open(softnic *nic, softnic_pd *pd, int p, int k, int recv, softnic_cq **cq,
	       softnic_qp **qp, gic_sq *sq, gic_cq *cqv)
{
	softnic_qp_attr qa = { .log_sq_bb = 10 };

	*cq = softnic_cq_create(nic, 10);
	qa.send_cq = *cq;
	if (recv)
		qa.recv_cq = *cq;
	*qp = *cq ? softnic_qp_create(pd, &qa) : NULL;
	if (!*qp) {
		FAIL("QP %d for PE %d: %s", k, p, softnic_last_error(nic));
		return ENOMEM;
	}
	softnic_qp_view(*qp, sq, cqv);
	return 0;
}

void mk_conn_record(softnic_qp *qp, uint64_t addr, uint32_t rkey, uint8_t *rec)
{
	gic_conn_info c = { .port = 1, .mtu = 5 };

	c.qpn = softnic_qp_num(qp);
	c.addr = addr;
	c.rkey = rkey;
	gic_conn_pack(&c, rec, GIC_CONN_WIRE_BYTES);
}

int mk_connect(gic_boot *b, softnic *nic, int nqp, const void *mine, softnic_qp **qp,
	       gic_conn_info *theirs)
{
	size_t rec_bytes = (size_t)mk.npe * nqp * GIC_CONN_WIRE_BYTES;
	uint8_t *all = calloc((size_t)mk.npe, rec_bytes);
	int rc;

	if (!all) {
		FAIL("no memory for the connection records");
		return ENOMEM;
	}
	rc = gic_boot_allgather(b, mine, rec_bytes, all, mk.wait_ns);
	if (rc)
		FAIL("allgather of connection records: %s", gic_boot_last_error(b));
	for (int p = 0; p < mk.npe && !rc; p++) {
		for (int k = 0; k < nqp && p != mk.me && !rc; k++) {
			const char *why = NULL;
			/* PE p's records are packed npe x nqp as well. */
			const uint8_t *rec = all + (size_t)p * rec_bytes +
					     ((size_t)mk.me * nqp + k) * GIC_CONN_WIRE_BYTES;
			gic_conn_info *t = &theirs[p * nqp + k];

			rc = gic_conn_unpack(rec, GIC_CONN_WIRE_BYTES, t, &why);
			if (rc) {
				FAIL("record %d of PE %d: %s", k, p, why ? why : strerror(rc));
				break;
			}
			rc = softnic_qp_connect_remote(qp[p * nqp + k], p, t->qpn);
			if (rc)
				FAIL("connect to PE %d QP 0x%x: %s", p, t->qpn, softnic_last_error(nic));
		}
	}
	free(all);
	/* Every half is connected before anyone writes. */
	if (!rc && (rc = gic_boot_barrier(b, mk.wait_ns)))
		FAIL("barrier after connecting: %s", gic_boot_last_error(b));
	return rc;
}

int mk_write_wait(gic_sq *sq, uint64_t raddr, uint32_t rkey, const void *data, uint32_t len,
		  uint64_t deadline)
{
	uint32_t nbb = gic_bb_for_ds(gic_ds_inline_write(len));
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, deadline);

	if (rc)
		return rc;
	gic_wqe_write_inline(sq, pos, raddr, rkey, data, len, GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(sq, pos + nbb, 0);
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return gic_sq_wait_retired(sq, pos + nbb, 0, GIC_ORDER_RELEASE_SYS, deadline);
}

void mk_check_bad(int rc, uint8_t got_synd, uint8_t got_vs, softnic_qp *qp, int p,
		  uint8_t synd, uint8_t vs, const char *what)
{
	if (rc != EIO)
		FAIL("%s to PE %d: expected an error CQE, got %s", what, p,
		     rc ? strerror(rc) : "success");
	else if (got_synd != synd || got_vs != vs)
		FAIL("%s to PE %d: expected syndrome 0x%02x / vendor 0x%02x, got %s", what, p,
		     synd, vs, mk_cqe_text(got_synd, got_vs));
	else if (!softnic_qp_in_error(qp))
		FAIL("%s to PE %d: the QP is not in the error state", what, p);
}

void mk_check_received(const uint8_t *got, size_t region_len)
{
	uint8_t *want = malloc(mk.slice);
	uint64_t counter, expect = 0;

	if (!want) {
		FAIL("no memory to check");
		return;
	}
	for (int src = 0; src < mk.npe; src++) {
		const uint8_t *g = got + (size_t)src * mk.slice;

		if (src == mk.me) {
			memset(want, 0, mk.slice);
		} else {
			mk_pattern(want, mk.slice, src, mk.me);
			expect += (uint64_t)mk.natomic * (uint64_t)(src + 1);
		}
		if (memcmp(g, want, mk.slice)) {
			size_t i = 0, bad = 0;

			while (g[i] == want[i])
				i++;
			for (size_t j = i; j < mk.slice; j++)
				bad += g[j] != want[j];
			FAIL("slice from PE %d: %zu of %u bytes wrong, first at %zu (0x%02x, "
			     "expected 0x%02x)", src, bad, mk.slice, i, g[i], want[i]);
		}
	}
	memcpy(&counter, got + mk_counter_off(), 8);
	if (counter != expect)
		FAIL("atomic counter %llu, expected %llu", (unsigned long long)counter,
		     (unsigned long long)expect);
	for (size_t i = 0; i < mk.guard; i++) {
		if (got[region_len + i] != 0xa5) {
			FAIL("guard byte %zu after the region was written", i);
			break;
		}
	}
	free(want);
}

void mk_check_fetched(const uint64_t *f, int p)
{
	uint64_t step = (uint64_t)mk.me + 1;

	for (int k = 0; k < mk.natomic; k++) {
		/* With two PEs this PE is the only adder: exactly k * step. */
		int bad = mk.npe == 2 ? f[k] != (uint64_t)k * step : (k && f[k] < f[k - 1] + step);

		if (bad) {
			FAIL("ATOMIC_FA %d to PE %d fetched %llu (previous %llu, step %llu)", k, p,
			     (unsigned long long)f[k], (unsigned long long)(k ? f[k - 1] : 0),
			     (unsigned long long)step);
			return;
		}
	}
}

int mk_check_peer_gone(int rc, const gic_sq *sq, const char *name, uint64_t writes,
		       uint64_t t0)
{
	if (rc != EIO)
		FAIL("%s: after %llu writes in %.1f ms: %s instead of an error CQE", name,
		     (unsigned long long)writes, (gic_now_ns() - t0) / 1e6, strerror(rc));
	else if (sq->err_info.vendor_syndrome != SOFTNIC_VSYND_PEER_GONE ||
		 sq->err_info.syndrome != GIC_SYND_TRANSPORT_RETRY_EXC_ERR)
		FAIL("%s: expected PEER_GONE / TRANSPORT_RETRY_EXC_ERR, got %s", name,
		     mk_cqe_text(sq->err_info.syndrome, sq->err_info.vendor_syndrome));
	else
		return 1;
	return 0;
}

int mk_all_passed(gic_boot *b)
{
	int32_t mine = mk.failures, *all = calloc((size_t)gic_boot_size(b), sizeof(*all));
	int rc = all ? gic_boot_allgather(b, &mine, sizeof(mine), all, mk.wait_ns) : ENOMEM;
	int passed = !rc;

	if (rc)
		FAIL("allgather of outcomes: %s", gic_boot_last_error(b));
	for (int p = 0; p < gic_boot_size(b) && !rc; p++)
		passed &= all[p] == 0;
	free(all);
	return passed;
}

int mk_transfer(gic_boot *b, const mk_transfer_ops *ops, void *ctx, const gic_conn_info *theirs,
		int nqp, size_t region_len)
{
	int rc, passed;

	for (int p = 0; p < mk.npe; p++)
		if (p != mk.me)
			ops->put(ctx, p);
	for (int p = 0; p < mk.npe; p++) {
		const gic_conn_info *t = &theirs[p * nqp];

		if (p == mk.me)
			continue;
		ops->check_fetched(ctx, p);
		ops->bad_write(ctx, p, 1, t->addr, t->rkey ^ 0xff, 8, GIC_SYND_REMOTE_ACCESS_ERR,
			       SOFTNIC_VSYND_BAD_RKEY, "write with a bad rkey");
		ops->bad_write(ctx, p, 2, t->addr + region_len - 8, t->rkey, 16,
			       GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_REMOTE_BOUNDS,
			       "write past the region");
		if (ops->more_bad)
			ops->more_bad(ctx, p);
	}
	/* Everyone's writes are complete before anyone checks. */
	rc = gic_boot_barrier(b, mk.wait_ns);
	if (rc)
		FAIL("barrier before checking: %s", gic_boot_last_error(b));
	else
		ops->check_received(ctx);
	passed = mk_all_passed(b);
	if (mk.me == 0)
		printf("%s transfer: %s on %d PEs (%u bytes, %d ATOMIC_FA and %d error checks per "
		       "pair%s)\n", mk.prog, passed ? "PASSED" : "FAILED", mk.npe, mk.slice, mk.natomic,
		       2 + ops->n_more_bad, ops->note);
	return passed ? 0 : 1;
}
