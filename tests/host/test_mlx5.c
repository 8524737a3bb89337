/*
 * The connection record's wire format and the mlx5 provider's parts that
 * need no device: device selection on a fake sysfs tree, the RC and DC
 * state machines, DC address vectors and WQE bytes against rdma-core's
 * setters, views from mlx5dv structures, work-request chains, the
 * registration fallback against simulated failures, the doorbell
 * forwarder against fake registers, and every entry point's error path
 * with no device.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ------------------------------------------------------------------ */
/* Device selection on a fake sysfs tree. */

static void mk(const char *root, const char *rel)
{
	char p[PATH_MAX], cmd[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", p);
	if (system(cmd))
		fprintf(stderr, "mkdir -p %s failed\n", p);
}

static void ln(const char *root, const char *target, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (symlink(target, p))
		fprintf(stderr, "symlink %s -> %s failed\n", p, target);
}

/* GPU 0000:05:00.0 behind a switch with mlx5_1; mlx5_0 on another root
 * port of the same root complex; mlx5_2 on the other socket; mlx5_3's
 * link dangles, mlx5_4 has none; GPU 0000:41:00.0 alone under
 * pci0000:40. */
static void fake_tree(const char *r)
{
	const char *sw = "devices/pci0000:00/0000:00:01.0/0000:01:00.0";

	mk(r, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.0");
	mk(r, "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:06:00.0");
	mk(r, "devices/pci0000:00/0000:00:02.0/0000:07:00.0");
	mk(r, "devices/pci0000:80/0000:80:01.0/0000:81:00.0");
	mk(r, "devices/pci0000:40/0000:40:01.0/0000:41:00.0");
	mk(r, "bus/pci/devices");
	ln(r, "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.0",
	   "bus/pci/devices/0000:05:00.0");
	ln(r, "../../../devices/pci0000:40/0000:40:01.0/0000:41:00.0", "bus/pci/devices/0000:41:00.0");
	for (int i = 0; i < 5; i++) {
		char d[64];

		snprintf(d, sizeof(d), "class/infiniband/mlx5_%d", i);
		mk(r, d);
	}
	(void)sw;
	ln(r, "../../../devices/pci0000:00/0000:00:02.0/0000:07:00.0", "class/infiniband/mlx5_0/device");
	ln(r, "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:06:00.0",
	   "class/infiniband/mlx5_1/device");
	ln(r, "../../../devices/pci0000:80/0000:80:01.0/0000:81:00.0", "class/infiniband/mlx5_2/device");
	ln(r, "../../../devices/pci0000:00/0000:09:00.0", "class/infiniband/mlx5_3/device");
}

static void rm_tree(const char *r)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r);
	if (system(cmd))
		fprintf(stderr, "rm -rf %s failed\n", r);
}

CASE(pick_near_sysfs)
{
	char root[] = "/tmp/gic_sysfs_XXXXXX", name[64] = "", err[512] = "";
	int shared = -1, rc;

	REQUIRE(mkdtemp(root), "mkdtemp");
	fake_tree(root);
	rc = gic_mlx5_pick_near(root, "0000:05:00.0", name, sizeof(name), &shared, err, sizeof(err));
	CHECK(rc == 0 && !strcmp(name, "mlx5_1") && shared == 3,
	      "GPU behind a switch: rc %d, %s, shared %d (%s)", rc, name, shared, err);
	CHECK(strstr(err, "mlx5_3") && strstr(err, "mlx5_4"), "skipped links named: '%s'", err);
	rc = gic_mlx5_pick_near(root, "00000000:05:00.0", name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == 0 && !strcmp(name, "mlx5_1"), "nvidia-smi's 8-digit domain: %d %s", rc, name);
	rc = gic_mlx5_pick_near(root, "05:00.0", name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == 0 && !strcmp(name, "mlx5_1"), "no domain: %d %s", rc, name);
	err[0] = 0;
	rc = gic_mlx5_pick_near(root, "0000:41:00.0", name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == ENOENT && strstr(err, "root complex"), "GPU with no NIC under its root: %d '%s'",
	      rc, err);
	rc = gic_mlx5_pick_near(root, "0000:99:00.0", name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == ENODEV && strstr(err, "not in"), "GPU not in the tree: %d '%s'", rc, err);
	rc = gic_mlx5_pick_near(root, "gpu0", name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == EINVAL && strstr(err, "not a PCI bus id"), "malformed bus id: %d '%s'", rc, err);
	rc = gic_mlx5_pick_near(root, NULL, name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == EINVAL, "NULL bus id: %d", rc);
	rm_tree(root);

	/* Only devices with bad links: no device at all. */
	REQUIRE(mkdtemp(strcpy(root, "/tmp/gic_sysfs_XXXXXX")), "mkdtemp");
	mk(root, "devices/pci0000:00/0000:00:01.0/0000:05:00.0");
	mk(root, "bus/pci/devices");
	mk(root, "class/infiniband/mlx5_0");
	ln(root, "../../../devices/pci0000:00/0000:00:01.0/0000:05:00.0", "bus/pci/devices/0000:05:00.0");
	ln(root, "/", "class/infiniband/mlx5_0/device"); /* outside the tree */
	rc = gic_mlx5_pick_near(root, "0000:05:00.0", name, sizeof(name), NULL, err, sizeof(err));
	CHECK(rc == ENODEV && strstr(err, "mlx5_0"), "link outside the tree: %d '%s'", rc, err);
	rm_tree(root);
	rc = gic_mlx5_pick_near("/nonexistent/gic", "0000:05:00.0", name, sizeof(name), NULL, err,
				sizeof(err));
	CHECK(rc == ENODEV, "no sysfs root: %d", rc);
}

CASE(pci_bus_id)
{
	char out[13];

	CHECK(gic_pci_bus_id_normalize("0000:3B:00.1", out) == 0 && !strcmp(out, "0000:3b:00.1"),
	      "case: %s", out);
	CHECK(gic_pci_bus_id_normalize("00000001:c1:1f.7", out) == 0 && !strcmp(out, "0001:c1:1f.7"),
	      "8-digit domain: %s", out);
	CHECK(gic_pci_bus_id_normalize("3b:00.0", out) == 0 && !strcmp(out, "0000:3b:00.0"),
	      "no domain: %s", out);
	CHECK(gic_pci_bus_id_normalize("0000:3b:20.0", out) == EINVAL, "device 0x20");
	CHECK(gic_pci_bus_id_normalize("0000:3b:00.8", out) == EINVAL, "function 8");
	CHECK(gic_pci_bus_id_normalize("0000:3b:00.0x", out) == EINVAL, "trailing junk");
	CHECK(gic_pci_bus_id_normalize("", out) == EINVAL, "empty");
}

/* ------------------------------------------------------------------ */
/* Every entry point with no device: a clear error, no crash. */

CASE(no_device_entry_points)
{
	char err[512] = "";
	gic_nic_attr attr = { .device = "gic_no_such_device" };
	gic_conn_info c = { .qpn = 1, .mtu = 5, .port = 1 };
	gic_sq sq;
	gic_cq cq;
	gic_wc wc[4];
	int n = -1;
	gic_wr wr = { .op = GIC_WR_WRITE, .len = 8 };
	gic_av_seg av;
	gic_mlx5 fake; /* no context: what a half-opened device looks like */

	errno = 0;
	CHECK(!gic_provider_mlx5.open(&attr, err, sizeof(err)) && errno == ENODEV &&
	      strstr(err, "no RDMA device"), "provider open: errno %d '%s'", errno, err);
	attr = (gic_nic_attr){ .gpu_pci = "0000:05:00.0" };
	err[0] = 0;
	CHECK(!gic_provider_mlx5.open(&attr, err, sizeof(err)) && errno && err[0],
	      "open near a GPU: errno %d '%s'", errno, err);
	attr.gpu_pci = "not-a-bus-id";
	CHECK(!gic_provider_mlx5.open(&attr, err, sizeof(err)) && errno == EINVAL, "bad bus id");
	memset(&fake, 0, sizeof(fake));
	errno = 0;
	CHECK(!gic_mlx5_reg_mr(NULL, &c, 8, GIC_ACCESS_ALL) && errno == EINVAL, "reg_mr NULL");
	CHECK(!gic_mlx5_reg_mr(&fake, &c, 8, GIC_ACCESS_ALL) && errno == EINVAL, "reg_mr no PD");
	CHECK(!gic_mlx5_cq_create(NULL, 6) && errno == EINVAL, "cq_create NULL");
	CHECK(!gic_mlx5_cq_create(&fake, 6) && errno == EINVAL && fake.base.err[0], "cq no ctx");
	CHECK(!gic_mlx5_rc_qp_create(&fake, NULL, 6, GIC_QUEUES_HOST) && errno == EINVAL, "qp");
	CHECK(!gic_mlx5_dct_create(&fake, NULL, &c) && errno == EINVAL, "dct");
	CHECK(!gic_mlx5_dci_pool_create(&fake, 0, 6, 6, GIC_QUEUES_HOST, &c) && errno == EINVAL,
	      "dci pool");
	CHECK(gic_mlx5_dc_av(&fake, &c, &av) == EINVAL, "dc_av without PD");
	CHECK(gic_mlx5_qp_view(NULL, GIC_VIEW_HOST, &sq, &cq) == EINVAL, "view");
	CHECK(gic_mlx5_qp_local(NULL, &c) == EINVAL, "local");
	CHECK(gic_mlx5_rc_connect(NULL, &c, &c) == EINVAL, "connect");
	CHECK(gic_mlx5_post(NULL, &wr, 1) == EINVAL, "post");
	CHECK(gic_mlx5_poll(NULL, wc, 4, &n) == EINVAL && n == 0, "poll");
	CHECK(gic_mlx5_poll(NULL, wc, 4, NULL) == EINVAL, "poll without count");
	CHECK(gic_mlx5_qp_destroy(NULL) == 0 && gic_mlx5_cq_destroy(NULL) == 0 &&
	      gic_mlx5_dereg_mr(NULL) == 0 && gic_mlx5_dct_destroy(NULL) == 0, "destroy NULL");
	gic_mlx5_dci_pool_destroy(NULL);
	gic_mlx5_close(NULL);
	CHECK(gic_dbfwd_stop(NULL, 1) == 0, "forwarder stop NULL");
	err[0] = 0;
	CHECK(gic_mlx5_cuda_probe("/nonexistent/libcuda.so.1", err, sizeof(err)) == ENOENT &&
	      strstr(err, "no CUDA driver"), "no CUDA driver: '%s'", err);
}

/* ------------------------------------------------------------------ */
/* DC. */

CASE(dc_transitions)
{
	gic_conn_info l = { .port = 1, .mtu = 4 };
	struct ibv_qp_attr a;
	int mask;

	REQUIRE(gic_dc_transition(GIC_DC_DCI, IBV_QPS_INIT, &l, &a, &mask) == 0, "dci init");
	CHECK(mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT) && a.port_num == 1,
	      "DCI INIT: no access flags (mask 0x%x)", mask);
	REQUIRE(gic_dc_transition(GIC_DC_DCT, IBV_QPS_INIT, &l, &a, &mask) == 0, "dct init");
	CHECK((mask & IBV_QP_ACCESS_FLAGS) && (a.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) &&
	      (a.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC), "DCT INIT: remote access");
	REQUIRE(gic_dc_transition(GIC_DC_DCI, IBV_QPS_RTR, &l, &a, &mask) == 0, "dci rtr");
	CHECK(mask == (IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV) && a.path_mtu == IBV_MTU_2048 &&
	      !a.ah_attr.is_global, "DCI RTR 0x%x", mask);
	REQUIRE(gic_dc_transition(GIC_DC_DCT, IBV_QPS_RTR, &l, &a, &mask) == 0, "dct rtr");
	CHECK((mask & IBV_QP_MIN_RNR_TIMER) && (mask & IBV_QP_AV), "DCT RTR 0x%x", mask);
	l.flags = GIC_CONN_GID_VALID;
	REQUIRE(gic_dc_transition(GIC_DC_DCI, IBV_QPS_RTR, &l, &a, &mask) == 0, "dci rtr roce");
	CHECK(a.ah_attr.is_global && a.ah_attr.grh.hop_limit > 1, "RoCE: global route");
	REQUIRE(gic_dc_transition(GIC_DC_DCI, IBV_QPS_RTS, &l, &a, &mask) == 0, "dci rts");
	CHECK(a.qp_state == IBV_QPS_RTS && (mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.retry_cnt == 7,
	      "DCI RTS");
	CHECK(gic_dc_transition(GIC_DC_DCT, IBV_QPS_RTS, &l, &a, &mask) == EINVAL, "DCT stays RTR");
	CHECK(gic_dc_transition(7, IBV_QPS_INIT, &l, &a, &mask) == EINVAL, "bad role");
	CHECK(gic_dc_transition(GIC_DC_DCI, IBV_QPS_SQD, &l, &a, &mask) == EINVAL, "SQD");
}

/* The DC WQE equals what rdma-core's setters write for the same request,
 * and the AV keeps an address handle's bytes and extended bit. */
CASE(dc_wqe_bytes)
{
	enum { BB = 8 };
	static uint8_t ring[BB * 64] __attribute__((aligned(64)));
	uint8_t want[128] __attribute__((aligned(16)));
	struct mlx5_wqe_av ah;
	gic_av_seg av;
	gic_cq cqv = { 0 };
	gic_sq sq = { .wqes = ring, .bb_cnt = BB, .qpn = 0x1234, .cq = &cqv };
	uint8_t rmac[6] = { 0 }, rgid[16];
	struct mlx5_wqe_raddr_seg *r;

	for (int i = 0; i < 16; i++)
		rgid[i] = (uint8_t)(0xa0 + i);
	/* An address handle's AV as libmlx5 would hold it (extended, GRH). */
	memset(&ah, 0, sizeof(ah));
	mlx5dv_set_dgram_seg((struct mlx5_wqe_datagram_seg *)&ah, 0, 0, 1, 0x35, 0, 0x77, rmac, 3,
			     64, 0x1001, rgid);
	gic_dc_av_from_ah(&ah, 0xabcdef, GIC_MLX5_DC_KEY, &av);
	memset(want, 0, sizeof(want));
	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)want, 7, MLX5_OPCODE_RDMA_WRITE, 0, 0x1234,
			    MLX5_WQE_CTRL_CQ_UPDATE, 6, 0, 0);
	mlx5dv_set_dgram_seg((struct mlx5_wqe_datagram_seg *)(want + 16), GIC_MLX5_DC_KEY, 0xabcdef,
			     1, 0x35, 0, 0x77, rmac, 3, 64, 0x1001, rgid);
	r = (struct mlx5_wqe_raddr_seg *)(want + 64);
	r->raddr = htobe64(0x1122334455667788ull);
	r->rkey = htobe32(0x5555);
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(want + 80), 4096, 0x6666, 0xfeed0000ull);
	/* Position 7 of an 8-BB ring: the second BB wraps to slot 0. */
	CHECK(gic_wqe_dc_write(&sq, 7, &av, 0x1122334455667788ull, 0x5555, 0xfeed0000ull, 0x6666, 4096,
			       GIC_CTRL_CQ_UPDATE) == 2, "2 BBs");
	CHECK(!memcmp(ring + 7 * 64, want, 64), "first BB differs from rdma-core's setters");
	CHECK(!memcmp(ring, want + 64, 32), "wrapped BB (raddr, data) differs");
	CHECK(gic_wqe_bb_count(((gic_ctrl_seg *)(ring + 7 * 64))->qpn_ds_be) == 2, "ds 6 = 2 BBs");
	/* An InfiniBand AH without a GRH holds the bit clear; the DC AV built
	 * from it still says it is the 48-byte form (the emulated device read
	 * a compact AV and failed the write with a local length error). */
	memset(&ah, 0, sizeof(ah));
	mlx5dv_set_dgram_seg((struct mlx5_wqe_datagram_seg *)&ah, 0, 0, 0, 0x35, 0, 0x77, rmac, 0,
			     0, 0, rgid);
	CHECK(!(be32toh(ah.dqp_dct) & MLX5_EXTENDED_UD_AV), "no-GRH AH without the bit");
	gic_dc_av_from_ah(&ah, 0xabcdef, GIC_MLX5_DC_KEY, &av);
	CHECK(be32toh(av.dqp_dct_be) == (MLX5_EXTENDED_UD_AV | 0xabcdef), "extended bit and DCT");
	CHECK(be64toh(av.dc_key_be) == GIC_MLX5_DC_KEY, "DC key");
}

/* ------------------------------------------------------------------ */
/* Views from mlx5dv, posted to with post.h. */

CASE(views_from_dv)
{
	static uint8_t sqbuf[16 * 64] __attribute__((aligned(64)));
	static uint8_t cqbuf[4 * 64] __attribute__((aligned(64)));
	static uint32_t qp_dbrec[2], cq_dbrec[2];
	static uint64_t uar[32];
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	gic_sq sq;
	gic_cq cq;
	uint64_t pos;

	memset(&dq, 0, sizeof(dq));
	memset(&dc, 0, sizeof(dc));
	dq.dbrec = (__be32 *)qp_dbrec;
	dq.sq.buf = sqbuf;
	dq.sq.wqe_cnt = 16;
	dq.sq.stride = 64;
	dq.bf.reg = uar;
	dq.bf.size = 256;
	dc.buf = cqbuf;
	dc.dbrec = (__be32 *)cq_dbrec;
	dc.cqe_cnt = 4;
	dc.cqe_size = 64;
	dc.cqn = 9;
	for (int i = 0; i < 4; i++)
		cqbuf[i * 64 + 63] = 0xf0; /* what libmlx5 writes: invalid, owner 0 */
	REQUIRE(gic_mlx5_views_from_dv(&dq, &dc, 0x77, 64, &sq, &cq) == 0, "views");
	CHECK(sq.wqes == sqbuf && sq.bb_cnt == 16 && sq.dbrec == &qp_dbrec[MLX5_SND_DBR] &&
	      sq.db == uar && sq.qpn == 0x77 && sq.max_inline == 64 && sq.cq == &cq, "sq view");
	CHECK(cq.cqes == (gic_cqe64 *)cqbuf && cq.dbrec == cq_dbrec && cq.cqe_cnt == 4 && cq.cqn == 9,
	      "cq view");
	/* post.h writes the WQE, the send doorbell record and the doorbell. */
	REQUIRE(gic_sq_reserve_excl(&sq, 1, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline()) == 0, "rsv");
	gic_wqe_write_inline_u64(&sq, pos, 0x1000, 0x22, 0xdeadbeef, GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(&sq, pos + 1, 0);
	gic_sq_publish_excl(&sq, GIC_ORDER_RELEASE_SYS);
	CHECK(qp_dbrec[MLX5_SND_DBR] == htobe32(1) && qp_dbrec[MLX5_RCV_DBR] == 0,
	      "send doorbell record 0x%x", qp_dbrec[MLX5_SND_DBR]);
	CHECK(uar[0] == gic_doorbell_value(0x77, 1), "doorbell register");
	CHECK(gic_cq_poll_one(&cq, &(gic_cqe_info){ 0 }, GIC_ORDER_RELEASE_SYS) == EAGAIN,
	      "libmlx5's invalid CQEs are not software-owned");
	dq.sq.stride = 128;
	CHECK(gic_mlx5_views_from_dv(&dq, &dc, 0x77, 64, &sq, &cq) == EINVAL, "stride 128");
	dq.sq.stride = 64;
	dc.cqe_size = 128;
	CHECK(gic_mlx5_views_from_dv(&dq, &dc, 0x77, 64, &sq, &cq) == EINVAL, "128-byte CQEs");
	dc.cqe_size = 64;
	dq.bf.reg = NULL;
	CHECK(gic_mlx5_views_from_dv(&dq, &dc, 0x77, 64, &sq, &cq) == EINVAL, "no doorbell");
}

/* ------------------------------------------------------------------ */
/* Host post path: work-request chains and completion statuses. */

CASE(wr_chain)
{
	gic_wr wr[GIC_POST_MAX_CHAIN + 1];
	struct ibv_send_wr out[GIC_POST_MAX_CHAIN];
	struct ibv_sge sge[GIC_POST_MAX_CHAIN];

	for (int i = 0; i < GIC_POST_MAX_CHAIN; i++)
		wr[i] = (gic_wr){ .wr_id = 100 + (uint64_t)i, .op = GIC_WR_WRITE, .len = 64,
				  .laddr = 0x1000 + (uint64_t)i * 64, .lkey = 1,
				  .raddr = 0x9000 + (uint64_t)i * 64, .rkey = 2,
				  .inline_data = i % 2 };
	wr[14].op = GIC_WR_WRITE_IMM;
	wr[14].inline_data = 0;
	wr[14].imm_be = htobe32(7);
	wr[15] = (gic_wr){ .wr_id = 999, .op = GIC_WR_ATOMIC_FA, .signaled = 1, .laddr = 0x2000,
			   .lkey = 3, .raddr = 0xa000, .rkey = 4, .add = 5 };
	REQUIRE(gic_mlx5_build_chain(wr, 16, 64, out, sge) == 0, "chain of 16");
	for (int i = 0; i < 15; i++) {
		CHECK(out[i].next == &out[i + 1] && out[i].sg_list == &sge[i] && out[i].num_sge == 1,
		      "link %d", i);
		CHECK(!(out[i].send_flags & IBV_SEND_SIGNALED), "%d unsignaled", i);
	}
	CHECK(out[0].opcode == IBV_WR_RDMA_WRITE && out[0].wr.rdma.remote_addr == 0x9000 &&
	      out[0].wr.rdma.rkey == 2 && sge[0].addr == 0x1000 && sge[0].length == 64 &&
	      sge[0].lkey == 1 && out[0].wr_id == 100, "write");
	CHECK((out[1].send_flags & IBV_SEND_INLINE) && !(out[0].send_flags & IBV_SEND_INLINE),
	      "inline flag");
	CHECK(out[14].opcode == IBV_WR_RDMA_WRITE_WITH_IMM && out[14].imm_data == htobe32(7), "imm");
	CHECK(out[15].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD && out[15].wr.atomic.compare_add == 5 &&
	      out[15].wr.atomic.remote_addr == 0xa000 && out[15].wr.atomic.rkey == 4 &&
	      sge[15].length == 8 && (out[15].send_flags & IBV_SEND_SIGNALED) && !out[15].next,
	      "atomic, signaled, last");
	CHECK(gic_mlx5_build_chain(wr, 17, 64, out, sge) == EINVAL, "17 requests");
	CHECK(gic_mlx5_build_chain(wr, 0, 64, out, sge) == EINVAL, "0 requests");
	CHECK(gic_mlx5_build_chain(&wr[1], 1, 32, out, sge) == EINVAL, "inline above max");
	wr[0].op = 9;
	CHECK(gic_mlx5_build_chain(wr, 1, 64, out, sge) == EINVAL, "bad opcode");
	CHECK(gic_mlx5_wc_syndrome(IBV_WC_SUCCESS) == 0 &&
	      gic_mlx5_wc_syndrome(IBV_WC_REM_ACCESS_ERR) == GIC_SYND_REMOTE_ACCESS_ERR &&
	      gic_mlx5_wc_syndrome(IBV_WC_WR_FLUSH_ERR) == GIC_SYND_WR_FLUSH_ERR &&
	      gic_mlx5_wc_syndrome(IBV_WC_RETRY_EXC_ERR) == GIC_SYND_TRANSPORT_RETRY_EXC_ERR &&
	      gic_mlx5_wc_syndrome(IBV_WC_GENERAL_ERR) == 0xff, "wc status -> syndrome");
}

/* ------------------------------------------------------------------ */
/* Registration: DMA-BUF first, peer memory second, reasons kept. */

typedef struct fake_reg {
	int gpu;              /* is_gpu answer */
	int fd_rc;            /* dmabuf_fd result */
	int dmabuf_errno;     /* 0: ibv_reg_dmabuf_mr succeeds */
	int mr_errno;         /* 0: ibv_reg_mr succeeds */
	int reg_dmabuf_calls, reg_mr_calls, closed;
	struct ibv_mr mr;
} fake_reg;

static int f_is_gpu(void *c, const void *a, char *why, size_t l)
{
	(void)a;
	if (!((fake_reg *)c)->gpu)
		snprintf(why, l, "no CUDA driver: simulated");
	return ((fake_reg *)c)->gpu;
}

static int f_fd(void *c, const void *a, size_t len, int *fd, uint64_t *off, char *why, size_t l)
{
	fake_reg *f = c;

	(void)len;
	if (f->fd_rc) {
		snprintf(why, l, "GPU 0 does not export DMA-BUFs (simulated)");
		return f->fd_rc;
	}
	*fd = 42;
	*off = (uintptr_t)a & 4095;
	return 0;
}

static struct ibv_mr *f_reg_dmabuf(void *c, uint64_t off, size_t len, uint64_t iova, int fd,
				   int access)
{
	fake_reg *f = c;

	(void)off, (void)len, (void)iova, (void)access;
	f->reg_dmabuf_calls++;
	if (fd != 42 || f->dmabuf_errno) {
		errno = f->dmabuf_errno ? f->dmabuf_errno : EBADF;
		return NULL;
	}
	return &f->mr;
}

static struct ibv_mr *f_reg_mr(void *c, void *addr, size_t len, int access)
{
	fake_reg *f = c;

	(void)addr, (void)len, (void)access;
	f->reg_mr_calls++;
	if (f->mr_errno) {
		errno = f->mr_errno;
		return NULL;
	}
	return &f->mr;
}

static void f_close(void *c, int fd)
{
	((fake_reg *)c)->closed += fd == 42;
}

static int reg_fake(fake_reg *f, gic_mlx5_mr *out, char *err, size_t len)
{
	gic_mlx5_reg_ops ops = { f_is_gpu, f_fd, f_reg_dmabuf, f_reg_mr, f_close, f };
	static uint8_t buf[8192];

	f->mr.lkey = 0x11;
	f->mr.rkey = 0x22;
	return gic_mlx5_reg_with(&ops, buf + 100, 4000, GIC_ACCESS_ALL, out, err, len);
}

CASE(reg_fallback)
{
	fake_reg f;
	gic_mlx5_mr mr;
	char err[512];

	f = (fake_reg){ .gpu = 0 };
	CHECK(reg_fake(&f, &mr, err, sizeof(err)) == 0 && mr.path == GIC_MLX5_REG_HOST &&
	      f.reg_dmabuf_calls == 0 && mr.mr == &f.mr, "host memory: ibv_reg_mr only");
	f = (fake_reg){ .gpu = 1 };
	CHECK(reg_fake(&f, &mr, err, sizeof(err)) == 0 && mr.path == GIC_MLX5_REG_DMABUF &&
	      mr.dmabuf_fd == 42 && f.reg_mr_calls == 0 && !mr.fallback_reason[0],
	      "GPU memory, DMA-BUF works: DMA-BUF");
	f = (fake_reg){ .gpu = 1, .fd_rc = ENOTSUP };
	CHECK(reg_fake(&f, &mr, err, sizeof(err)) == 0 && mr.path == GIC_MLX5_REG_PEERMEM &&
	      f.reg_dmabuf_calls == 0 && strstr(mr.fallback_reason, "DMA-BUF"),
	      "no DMA-BUF export: peer memory, reason '%s'", mr.fallback_reason);
	f = (fake_reg){ .gpu = 1, .dmabuf_errno = EOPNOTSUPP };
	CHECK(reg_fake(&f, &mr, err, sizeof(err)) == 0 && mr.path == GIC_MLX5_REG_PEERMEM &&
	      f.closed == 1 && strstr(mr.fallback_reason, "ibv_reg_dmabuf_mr") &&
	      strstr(mr.fallback_reason, "kernel"), "kernel without DMA-BUF MRs: '%s' (fd closed %d)",
	      mr.fallback_reason, f.closed);
	f = (fake_reg){ .gpu = 1, .dmabuf_errno = EOPNOTSUPP, .mr_errno = EFAULT };
	err[0] = 0;
	CHECK(reg_fake(&f, &mr, err, sizeof(err)) == EFAULT && strstr(err, "ibv_reg_dmabuf_mr") &&
	      strstr(err, "nvidia-peermem"), "both fail: '%s'", err);
	f = (fake_reg){ .gpu = 0, .mr_errno = ENOMEM };
	CHECK(reg_fake(&f, &mr, err, sizeof(err)) == ENOMEM && strstr(err, "ulimit -l"),
	      "host, locked-memory limit: '%s'", err);
	CHECK(gic_mlx5_reg_with(NULL, err, 8, 0, &mr, NULL, 0) == EINVAL, "NULL ops");
}

/* ------------------------------------------------------------------ */
/* Doorbell forwarder against fake registers in host memory. */

CASE(doorbell_forwarder)
{
	uint64_t shadow[2] = { 0, 0 }, reg[2] = { 0, 0 }, t0;
	gic_dbfwd_entry e[2] = { { &shadow[0], &reg[0], 0 }, { &shadow[1], &reg[1], 0 } };
	gic_dbfwd *f;

	CHECK(gic_dbfwd_step(e, 2) == 0 && reg[0] == 0, "nothing new: nothing rung");
	shadow[1] = gic_doorbell_value(5, 3);
	CHECK(gic_dbfwd_step(e, 2) == 1 && reg[1] == shadow[1] && reg[0] == 0, "one rung");
	reg[1] = 0;
	CHECK(gic_dbfwd_step(e, 2) == 0 && reg[1] == 0, "the same value is not rung twice");

	memset(shadow, 0, sizeof(shadow));
	memset(reg, 0, sizeof(reg));
	f = gic_dbfwd_start(2, -1);
	REQUIRE(f, "start: %s", strerror(errno));
	CHECK(gic_dbfwd_add(f, &shadow[0], &reg[0]) == 0 && gic_dbfwd_add(f, &shadow[1], &reg[1]) == 0,
	      "add");
	CHECK(gic_dbfwd_add(f, &shadow[1], &reg[1]) == ENOSPC, "full");
	for (uint64_t i = 1; i <= 200; i++) {
		uint64_t v = gic_doorbell_value(7, i);

		__atomic_store_n(&shadow[i & 1], v, __ATOMIC_RELEASE);
		t0 = gic_now_ns();
		while (__atomic_load_n(&reg[i & 1], __ATOMIC_ACQUIRE) != v &&
		       gic_now_ns() - t0 < 2000000000ull)
			sched_yield(); /* CI machines may have two CPUs for both threads */
		REQUIRE(__atomic_load_n(&reg[i & 1], __ATOMIC_ACQUIRE) == v,
			"doorbell %llu not forwarded within 2 s",
			(unsigned long long)i);
	}
	CHECK(gic_dbfwd_count(f) == 200, "forwarded %llu", (unsigned long long)gic_dbfwd_count(f));
	t0 = gic_now_ns();
	CHECK(gic_dbfwd_stop(f, 2000000000ull) == 0 && gic_now_ns() - t0 < 2000000000ull, "stop");
	CHECK(!gic_dbfwd_start(0, -1) && errno == EINVAL, "0 entries");
}

static const tk_case cases[] = {
	TK_ENTRY(conn_round_trip), TK_ENTRY(conn_wire_layout), TK_ENTRY(conn_rejects),
	TK_ENTRY(rc_transitions), TK_ENTRY(open_error_paths), TK_ENTRY(pick_near_sysfs),
	TK_ENTRY(pci_bus_id), TK_ENTRY(no_device_entry_points), TK_ENTRY(dc_transitions),
	TK_ENTRY(dc_wqe_bytes), TK_ENTRY(views_from_dv), TK_ENTRY(wr_chain), TK_ENTRY(reg_fallback),
	TK_ENTRY(doorbell_forwarder),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_mlx5", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
