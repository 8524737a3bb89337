/*
 * The connection record's wire format and the mlx5 provider's parts that
 * need no device: the RC state machine and the error paths of opening a
 * device (on a machine with an RDMA device, the name lookup's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gic/conn.h"
#include "gic/mlx5_provider.h"
#include "testkit.h"

static gic_conn_info random_record(uint64_t *seed)
{
	gic_conn_info c;

	memset(&c, 0, sizeof(c));
	c.qpn = (uint32_t)tk_rand(seed) & 0xffffff;
	c.psn = (uint32_t)tk_rand(seed) & 0xffffff;
	c.lid = (uint16_t)tk_rand(seed);
	c.port = (uint8_t)(1 + tk_rand(seed) % 2);
	c.mtu = (uint8_t)(1 + tk_rand(seed) % 5);
	for (int i = 0; i < 16; i++)
		c.gid[i] = (uint8_t)tk_rand(seed);
	c.addr = tk_rand(seed);
	c.rkey = (uint32_t)tk_rand(seed);
	c.flags = (uint32_t)tk_rand(seed) & GIC_CONN_GID_VALID;
	return c;
}

/* FNV-1a of the first 60 bytes, as the format defines the checksum. */
static void reseal(uint8_t *buf)
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 60; i++)
		h = (h ^ buf[i]) * 16777619u;
	for (int i = 0; i < 4; i++)
		buf[60 + i] = (uint8_t)(h >> (8 * i));
}

CASE(conn_round_trip)
{
	uint64_t seed = 5;

	for (int i = 0; i < 10000; i++) {
		gic_conn_info a = random_record(&seed), b;
		uint8_t wire[GIC_CONN_WIRE_BYTES];

		REQUIRE(gic_conn_pack(&a, wire, sizeof(wire)) == 0, "pack %d", i);
		REQUIRE(gic_conn_unpack(wire, sizeof(wire), &b, NULL) == 0, "unpack %d", i);
		REQUIRE(memcmp(&a, &b, sizeof(a)) == 0, "record %d changed on the way", i);
	}
}

CASE(conn_wire_layout)
{
	gic_conn_info c = { .qpn = 0x123456, .psn = 0xabcdef, .lid = 0x1234, .port = 1, .mtu = 5,
			    .addr = 0x1122334455667788ull, .rkey = 0xdeadbeef, .flags = 1 };
	uint8_t w[GIC_CONN_WIRE_BYTES];

	c.gid[0] = 0xfe;
	c.gid[15] = 0x01;
	REQUIRE(gic_conn_pack(&c, w, sizeof(w)) == 0, "pack");
	CHECK(!memcmp(w, "GICC", 4) && w[4] == 1 && w[5] == 0 && w[6] == 64, "header");
	CHECK(w[8] == 0x56 && w[9] == 0x34 && w[10] == 0x12 && w[11] == 0, "qpn little-endian");
	CHECK(w[12] == 0xef && w[14] == 0xab, "psn");
	CHECK(w[16] == 0x34 && w[17] == 0x12 && w[18] == 1 && w[19] == 5, "lid, port, mtu");
	CHECK(w[20] == 0xfe && w[35] == 0x01, "gid");
	CHECK(w[36] == 0x88 && w[43] == 0x11, "addr");
	CHECK(w[44] == 0xef && w[47] == 0xde && w[48] == 1, "rkey, flags");
	for (int i = 52; i < 60; i++)
		CHECK(w[i] == 0, "reserved byte %d", i);
}

CASE(conn_rejects)
{
	uint64_t seed = 9;
	gic_conn_info a = random_record(&seed), b, bad = a;
	uint8_t w[GIC_CONN_WIRE_BYTES], x[GIC_CONN_WIRE_BYTES];
	const char *why = NULL;

	REQUIRE(gic_conn_pack(&a, w, sizeof(w)) == 0, "pack");
	CHECK(gic_conn_pack(&a, w, 63) == ENOSPC, "small buffer");
	CHECK(gic_conn_unpack(w, 63, &b, &why) == EPROTO && strstr(why, "shorter"), "short");
	for (int i = 0; i < 64; i++) {
		memcpy(x, w, sizeof(x));
		x[i] ^= 0x40;
		CHECK(gic_conn_unpack(x, sizeof(x), &b, &why) == EPROTO, "byte %d flipped: accepted", i);
	}
	memcpy(x, w, sizeof(x));
	x[19] = 7; /* mtu out of range, with a valid checksum */
	reseal(x);
	CHECK(gic_conn_unpack(x, sizeof(x), &b, &why) == EPROTO && strstr(why, "range"), "mtu 7: %s",
	      why ? why : "");
	memcpy(x, w, sizeof(x));
	x[4] = 2;
	reseal(x);
	CHECK(gic_conn_unpack(x, sizeof(x), &b, &why) == EPROTO && strstr(why, "version"), "version");
	bad.qpn = 1u << 24;
	CHECK(gic_conn_pack(&bad, w, sizeof(w)) == EINVAL, "qpn of 25 bits");
	bad = a;
	bad.mtu = 0;
	CHECK(gic_conn_pack(&bad, w, sizeof(w)) == EINVAL, "mtu 0");
	CHECK(gic_conn_pack(NULL, w, sizeof(w)) == EINVAL && gic_conn_unpack(NULL, 64, &b, NULL) ==
	      EINVAL, "NULL");
}

CASE(rc_transitions)
{
	gic_conn_info l = { .qpn = 0x111, .psn = 0x222, .lid = 3, .port = 1, .mtu = 5 };
	gic_conn_info r = { .qpn = 0x444, .psn = 0x555, .lid = 6, .port = 1, .mtu = 3 };
	struct ibv_qp_attr a;
	int mask = 0;

	REQUIRE(gic_rc_transition(IBV_QPS_INIT, &l, &r, &a, &mask) == 0, "init");
	CHECK(a.qp_state == IBV_QPS_INIT && a.port_num == 1 &&
	      (a.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC) && (mask & IBV_QP_ACCESS_FLAGS), "init");
	REQUIRE(gic_rc_transition(IBV_QPS_RTR, &l, &r, &a, &mask) == 0, "rtr");
	CHECK(a.qp_state == IBV_QPS_RTR && a.dest_qp_num == 0x444 && a.rq_psn == 0x555 &&
	      a.ah_attr.dlid == 6 && a.path_mtu == IBV_MTU_1024 && !a.ah_attr.is_global,
	      "rtr: the peer's QP, PSN, LID and the smaller MTU");
	CHECK(mask == (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), "rtr mask 0x%x", mask);
	r.flags = GIC_CONN_GID_VALID;
	r.gid[15] = 9;
	REQUIRE(gic_rc_transition(IBV_QPS_RTR, &l, &r, &a, &mask) == 0, "rtr roce");
	CHECK(a.ah_attr.is_global && a.ah_attr.grh.dgid.raw[15] == 9, "RoCE: global route to the gid");
	REQUIRE(gic_rc_transition(IBV_QPS_RTS, &l, &r, &a, &mask) == 0, "rts");
	CHECK(a.qp_state == IBV_QPS_RTS && a.sq_psn == 0x222 && a.retry_cnt == 7 &&
	      (mask & IBV_QP_SQ_PSN) && !(mask & IBV_QP_AV), "rts: our PSN, no address vector");
	CHECK(gic_rc_transition(IBV_QPS_SQD, &l, &r, &a, &mask) == EINVAL && mask == 0, "SQD");
	CHECK(gic_rc_transition(IBV_QPS_RTS, NULL, &r, &a, &mask) == EINVAL, "NULL");
}

CASE(open_error_paths)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	char err[512] = "";
	gic_mlx5 *m;

	if (list)
		ibv_free_device_list(list);
	errno = 0;
	m = gic_mlx5_open("gic_no_such_device", 1, err, sizeof(err));
	CHECK(!m && errno == ENODEV, "unknown device name: errno %d", errno);
	CHECK(strstr(err, n ? "no RDMA device named 'gic_no_such_device'" : "no RDMA device:") != NULL,
	      "message '%s'", err);
	if (n == 0) { /* this machine has no RDMA device (or no RDMA subsystem) */
		err[0] = 0;
		errno = 0;
		m = gic_mlx5_open(NULL, 1, err, sizeof(err));
		CHECK(!m && errno == ENODEV && strstr(err, "no RDMA device: ibv_get_device_list"),
		      "first device: %s", err);
	}
	gic_mlx5_close(NULL); /* a no-op */
}

static const tk_case cases[] = {
	TK_ENTRY(conn_round_trip), TK_ENTRY(conn_wire_layout), TK_ENTRY(conn_rejects),
	TK_ENTRY(rc_transitions), TK_ENTRY(open_error_paths),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_mlx5", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
