/*
 * The emulated device: the device list, opening a device, and its
 * attributes. Attributes are a ConnectX-7's where softnic can honour them,
 * and softnic's own limits where they are smaller (each such field says
 * so); `docs/emu.md` lists them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "emu.h"
#include "gic/softnic_wire.h"

#undef ibv_get_device_list
#undef ibv_query_port

emu_global emu = { .lock = PTHREAD_MUTEX_INITIALIZER };

void emu_missing(const char *name, const char *what)
{
	fprintf(stderr, "gic-emu: %s: %s\n", name, what);
}

/* A positive integer from the environment, or def. */
static int env_int(const char *name, int def, int lo, int hi)
{
	const char *v = getenv(name);
	char *end = NULL;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	if (*end || n < lo || n > hi) {
		fprintf(stderr, "gic-emu: %s=%s is not in %d..%d; using %d\n", name, v, lo, hi, def);
		return def;
	}
	return (int)n;
}

void emu_init_devices(void)
{
	const char *link = getenv("GIC_EMU_LINK");

	pthread_mutex_lock(&emu.lock);
	if (emu.ndev) {
		pthread_mutex_unlock(&emu.lock);
		return;
	}
	emu.link_layer = link && !strcmp(link, "roce") ? IBV_LINK_LAYER_ETHERNET
						       : IBV_LINK_LAYER_INFINIBAND;
	if (link && strcmp(link, "roce") && strcmp(link, "ib"))
		fprintf(stderr, "gic-emu: GIC_EMU_LINK=%s is neither ib nor roce; using ib\n", link);
	emu.ndev = env_int("GIC_EMU_DEVICES", 1, 1, EMU_MAX_DEVICES);
	for (int i = 0; i < emu.ndev; i++) {
		emu_device *d = &emu.devs[i];

		d->index = i;
		d->lid = (uint16_t)(i + 1);
		d->guid = 0x248a070300a10000ull + (uint64_t)i; /* Mellanox OUI */
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->dev.name, sizeof(d->dev.name), "mlx5_%d", i);
		snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", i);
		snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
			 i);
		snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/mlx5_%d", i);
		emu.list[i] = &d->dev;
	}
	emu.list[emu.ndev] = NULL;
	pthread_mutex_unlock(&emu.lock);
}

static emu_device *emu_dev_of(struct ibv_device *d)
{
	for (int i = 0; i < emu.ndev; i++)
		if (d == &emu.devs[i].dev)
			return &emu.devs[i];
	return NULL;
}

struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **l;

	emu_init_devices();
	l = calloc((size_t)emu.ndev + 1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(l, emu.list, sizeof(*l) * (size_t)emu.ndev);
	if (num)
		*num = emu.ndev;
	return l;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *d)
{
	return d ? d->name : NULL;
}

__be64 ibv_get_device_guid(struct ibv_device *d)
{
	emu_device *e = d ? emu_dev_of(d) : NULL;

	return e ? htobe64(e->guid) : 0;
}

int ibv_get_device_index(struct ibv_device *d)
{
	emu_device *e = d ? emu_dev_of(d) : NULL;

	return e ? e->index : -1;
}

/* Queue memory in whole pages: a program can register each queue (send
 * queue, doorbell record, doorbell register, CQ) with CUDA on its own, as
 * a GPU-initiated library registers a NIC's queues and UAR. */
static void *page_alloc(size_t size, size_t align, void *ctx)
{
	size_t page = 4096, len = (size + page - 1) & ~(page - 1);
	void *p = NULL;

	(void)ctx;
	if (posix_memalign(&p, align > page ? align : page, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

static void page_free(void *p, void *ctx)
{
	(void)ctx;
	free(p);
}

static const softnic_allocator page_queues = { page_alloc, page_free, NULL, NULL };

/* QPs of other processes on this host become reachable (softnic's wire),
 * with GIC_EMU_WIRE_RING_MB MiB of payload ring per connection and
 * direction (the largest message; default 8). Without it (no /dev/shm),
 * QPs connect within this process only, said once. */
static void nic_wire_enable(void)
{
	size_t mb = (size_t)env_int("GIC_EMU_WIRE_RING_MB", 8, 1, 1024);
	int rc = softnic_wire_enable(emu.nic, mb << 20);

	if (rc)
		fprintf(stderr, "gic-emu: QPs of other processes are unreachable: %s\n",
			softnic_last_error(emu.nic));
}

/* The process's softnic: GIC_EMU_ENGINE=cpu (default: softnic's CPU
 * engine, GIC_EMU_ENGINE_THREADS threads, queues in host memory) or gpu
 * (its GPU engine on CUDA device GIC_EMU_GPU, queues in GPU memory,
 * verbs_gpu.c). NULL with errno. */
static softnic *nic_open(void)
{
	const char *engine = getenv("GIC_EMU_ENGINE");
	softnic_attr a = { .engine_threads = env_int("GIC_EMU_ENGINE_THREADS", 1, 1, 64),
			   .queue_mem = &page_queues };

	if (engine && !strcmp(engine, "gpu")) {
		emu.gpu_engine = 1;
		return emu_gpu_open(env_int("GIC_EMU_GPU", 0, 0, 63),
				    env_int("GIC_EMU_GPU_WARPS", 4, 1, 32));
	}
	if (engine && *engine && strcmp(engine, "cpu")) {
		fprintf(stderr, "gic-emu: GIC_EMU_ENGINE=%s: expected cpu or gpu\n", engine);
		errno = EINVAL;
		return NULL;
	}
	return softnic_open(&a);
}

/* The process's softnic, opened with the first context. */
static int nic_get(void)
{
	int rc = 0;

	pthread_mutex_lock(&emu.lock);
	if (!emu.nic) {
		emu.nic = nic_open();
		if (!emu.nic)
			rc = errno ? errno : ENOMEM;
		else if (!emu.gpu_engine)
			nic_wire_enable(); /* the wire is the CPU engine's */
		/* On a host with few CPUs, applications that spin in
		 * ibv_poll_cq would starve the engines of the processes they
		 * talk to (a NIC needs no CPU): there an empty poll yields
		 * every 64th time. */
		emu.poll_yield = env_int("GIC_EMU_POLL_YIELD",
					 sysconf(_SC_NPROCESSORS_ONLN) < 8 ? 64 : 0, 0, 1 << 20);
	}
	if (!rc)
		emu.nic_users++;
	pthread_mutex_unlock(&emu.lock);
	return rc;
}

static void nic_put(void)
{
	pthread_mutex_lock(&emu.lock);
	if (--emu.nic_users == 0) {
		softnic_close(emu.nic);
		emu.nic = NULL;
	}
	pthread_mutex_unlock(&emu.lock);
}

static void ctx_set_ops(emu_ctx *c)
{
	struct verbs_context *v = &c->vctx;

	v->context.ops.post_send = emu_post_send;
	v->context.ops.post_recv = emu_post_recv;
	v->context.ops.post_srq_recv = emu_post_srq_recv;
	v->context.ops.poll_cq = emu_poll_cq;
	v->context.ops.req_notify_cq = emu_req_notify_cq;
	v->query_port = emu_query_port;
	v->query_device_ex = emu_query_device_ex;
	v->get_srq_num = emu_get_srq_num;
	v->create_qp_ex = emu_create_qp_ex;
	emu_objects_set_ops(v); /* create_cq_ex, alloc_parent_domain */
	/* Every op from query_port (the first field) to the end is here. */
	v->sz = sizeof(*v);
}

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
	emu_device *e = d ? emu_dev_of(d) : NULL;
	emu_ctx *c;
	int rc;

	if (!e) {
		errno = ENODEV;
		return NULL;
	}
	rc = nic_get();
	if (rc) {
		fprintf(stderr, "gic-emu: ibv_open_device(%s): softnic_open: %s\n", d->name,
			strerror(rc));
		errno = rc;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		nic_put();
		errno = ENOMEM;
		return NULL;
	}
	c->edev = e;
	c->vctx.context.device = d;
	c->vctx.context.cmd_fd = -1;
	/* Nothing raises asynchronous events yet; a reader blocks, as on an
	 * idle device. */
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	c->vctx.context.num_comp_vectors = 1;
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	ctx_set_ops(c);
	return &c->vctx.context;
}

int ibv_close_device(struct ibv_context *ctx)
{
	emu_ctx *c;

	if (!ctx)
		return EINVAL;
	c = emu_ctx_of(ctx);
	if (ctx->async_fd >= 0)
		close(ctx->async_fd);
	pthread_mutex_destroy(&ctx->mutex);
	free(c);
	nic_put();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Attributes. */

static void fill_device_attr(const emu_device *e, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "28.39.1002 (gic softnic)");
	a->node_guid = htobe64(e->guid);
	a->sys_image_guid = htobe64(e->guid);
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = 0xfffffffffffff000ull;
	a->vendor_id = 0x02c9;      /* Mellanox */
	a->vendor_part_id = 4129;   /* ConnectX-7 */
	a->hw_ver = 0;
	a->max_qp = 4095;           /* softnic: its QP table (a CX-7: 131072) */
	a->max_qp_wr = EMU_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SHUTDOWN_PORT |
			      IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_CHANGE_PHY_PORT;
	a->max_sge = EMU_MAX_SGE;   /* softnic (a CX-7: 30) */
	a->max_sge_rd = EMU_MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = (1 << 16) - 1; /* softnic: 2^16 entries (a CX-7: 2^22) */
	a->max_mr = 4095;           /* softnic: its MR table */
	a->max_pd = 1 << 24;
	a->max_qp_rd_atom = 16;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = 16 * 4095;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_srq = 4095;
	a->max_srq_wr = (1 << 15) - 1;
	a->max_srq_sge = EMU_MAX_SGE;
	a->max_pkeys = 128;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	if (!ctx || !a)
		return EINVAL;
	fill_device_attr(emu_ctx_of(ctx)->edev, a);
	return 0;
}

int emu_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *a, size_t len)
{
	struct ibv_device_attr_ex full;

	if (!ctx || !a || (in && in->comp_mask) || len < sizeof(a->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	fill_device_attr(emu_ctx_of(ctx)->edev, &full.orig_attr);
	full.max_dm_size = 0;
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
	full.pci_atomic_caps.fetch_add = 0;
	/* Masked atomics of 4 and 8 bytes (mlx5dv exposes them). */
	memcpy(a, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

static void fill_port_attr(const emu_device *e, struct ibv_port_attr *p)
{
	memset(p, 0, sizeof(*p));
	p->state = IBV_PORT_ACTIVE;
	p->max_mtu = IBV_MTU_4096;
	p->active_mtu = IBV_MTU_4096;
	p->gid_tbl_len = emu.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
	p->port_cap_flags = IBV_PORT_CM_SUP;
	p->max_msg_sz = 1u << 31;
	p->bad_pkey_cntr = 0;
	p->qkey_viol_cntr = 0;
	p->pkey_tbl_len = 1;
	p->lid = emu.link_layer == IBV_LINK_LAYER_ETHERNET ? 0 : e->lid;
	p->sm_lid = emu.link_layer == IBV_LINK_LAYER_ETHERNET ? 0 : 1;
	p->lmc = 0;
	p->max_vl_num = 4;
	p->sm_sl = 0;
	p->subnet_timeout = 18;
	p->init_type_reply = 0;
	p->active_width = 2;   /* 4x */
	p->active_speed = 64;  /* HDR: 4x 50 Gb/s, the paper's 200 Gb/s CX-7 */
	p->phys_state = 5;     /* LinkUp */
	p->link_layer = (uint8_t)emu.link_layer;
}

int emu_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a, size_t len)
{
	struct ibv_port_attr full;

	if (!ctx || !a || port != 1)
		return EINVAL;
	fill_port_attr(emu_ctx_of(ctx)->edev, &full);
	memcpy(a, &full, len < sizeof(full) ? len : sizeof(full));
	return 0;
}

/* The exported compat entry, for binaries that call it directly: its
 * struct _compat_ibv_port_attr is ibv_port_attr up to link_layer. */
int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *a)
{
	return emu_query_port(ctx, port, (struct ibv_port_attr *)a,
			      offsetof(struct ibv_port_attr, flags));
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	emu_device *e;

	if (!ctx || !gid || port != 1 || index < 0 ||
	    index >= (emu.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1))
		return EINVAL;
	e = emu_ctx_of(ctx)->edev;
	memset(gid, 0, sizeof(*gid));
	if (emu.link_layer == IBV_LINK_LAYER_ETHERNET && index == 1) {
		/* RoCE v2: an IPv4-mapped address, 10.255.0.<lid>. */
		gid->raw[10] = gid->raw[11] = 0xff;
		gid->raw[12] = 10;
		gid->raw[13] = 255;
		gid->raw[15] = (uint8_t)e->lid;
	} else {
		gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
		gid->global.interface_id = htobe64(e->guid);
	}
	return 0;
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	if (!ctx || !pkey || port != 1 || index != 0)
		return EINVAL;
	*pkey = htobe16(0xffff);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port, __be16 pkey)
{
	if (!ctx || port != 1)
		return -EINVAL;
	return be16toh(pkey) == 0xffff || be16toh(pkey) == 0x7fff ? 0 : -ENOENT;
}

int ibv_fork_init(void)
{
	return 0; /* softnic pins nothing */
}

/* ------------------------------------------------------------------ */
/* GID entries (the typed form perftest, NCCL and pyverbs use). */

static uint32_t gid_count(void)
{
	return emu.link_layer == IBV_LINK_LAYER_ETHERNET ? 2 : 1;
}

static int gid_entry(struct ibv_context *ctx, uint32_t index, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	if (ibv_query_gid(ctx, 1, (int)index, &e->gid))
		return EINVAL;
	e->gid_index = index;
	e->port_num = 1;
	e->gid_type = emu.link_layer == IBV_LINK_LAYER_ETHERNET
			      ? (index == 1 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1)
			      : IBV_GID_TYPE_IB;
	e->ndev_ifindex = 0;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (!ctx || !entry || port != 1 || flags || entry_size < sizeof(e) || index >= gid_count())
		return EINVAL;
	if (gid_entry(ctx, index, &e))
		return EINVAL;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	size_t n = 0;

	if (!ctx || !entries || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < gid_count()) /* the table does not fit */
		return -EINVAL;
	for (uint32_t i = 0; i < gid_count() && n < max_entries; i++, n++)
		gid_entry(ctx, i, (struct ibv_gid_entry *)((char *)entries + n * entry_size));
	return (ssize_t)n;
}

/* rdma-core's private ibv_query_gid_type (pyverbs, ibv_devinfo): 0 for IB
 * and RoCE v1 GIDs, 1 for RoCE v2 (enum ibv_gid_type_sysfs). */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index, int *type)
{
	struct ibv_gid_entry e;

	if (!ctx || !type || port != 1 || index >= gid_count() || gid_entry(ctx, index, &e)) {
		errno = EINVAL;
		return -1;
	}
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* sysfs: the emulated devices have none. Files under their paths are
 * answered here (board_id, fw_ver, node_desc, node_type); any other path
 * is read from the real file system, as rdma-core reads it. */

const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return env && *env ? env : "/sys";
}

/* The text of an emulated device's sysfs file, or NULL. */
static const char *emu_sysfs_text(const char *dir, const char *file, char *tmp, size_t len)
{
	for (int i = 0; i < emu.ndev; i++) {
		if (strcmp(dir, emu.devs[i].dev.ibdev_path))
			continue;
		if (!strcmp(file, "board_id"))
			return "GIC_SOFTNIC_CX7";
		if (!strcmp(file, "fw_ver"))
			return "28.39.1002";
		if (!strcmp(file, "node_type"))
			return "1: CA";
		if (!strcmp(file, "node_desc")) {
			snprintf(tmp, len, "gic softnic %s", emu.devs[i].dev.name);
			return tmp;
		}
	}
	return NULL;
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512], tmp[96];
	const char *t;
	FILE *f;
	size_t n;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	emu_init_devices();
	t = emu_sysfs_text(dir, file, tmp, sizeof(tmp));
	if (t) {
		snprintf(buf, size, "%s", t);
		return (int)strlen(buf);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}
