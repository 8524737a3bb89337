/*
 * mlx5 provider: opening a device. Every failure says which call failed,
 * its errno, and the likely cause.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "mlx5_internal.h"

#define say gic_mlx5_say

/* The device called name, or the first; NULL with errno and a message. */
static struct ibv_device *find_device(struct ibv_device **list, int n, const char *name,
				      char *err, size_t len)
{
	char seen[256] = "";

	if (n == 0) {
		say(err, len, "no RDMA device: ibv_get_device_list() found 0 devices "
			      "(is the mlx5_ib driver loaded and /dev/infiniband present? "
			      "softnic needs none)");
		errno = ENODEV;
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const char *dev = ibv_get_device_name(list[i]);

		if (!name || !strcmp(name, dev))
			return list[i];
		if (strlen(seen) + strlen(dev) + 3 < sizeof(seen)) {
			strcat(seen, i ? ", " : "");
			strcat(seen, dev);
		}
	}
	say(err, len, "no RDMA device named '%s' (found: %s)", name, seen);
	errno = ENODEV;
	return NULL;
}

/* The source gid: none on InfiniBand (LID routing); on RoCE the first
 * RoCE v2 entry holding an IPv4-mapped address, else the first RoCE v2
 * entry, else index 0. GIC_MLX5_GID_INDEX overrides. */
static void pick_gid(gic_mlx5 *m)
{
	const char *env = getenv("GIC_MLX5_GID_INDEX");
	int best = -1;

	m->gid_index = -1;
	if (env && *env) {
		m->gid_index = atoi(env);
	} else if (m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
		for (int i = 0; i < m->port_attr.gid_tbl_len && i < 256; i++) {
			struct ibv_gid_entry e;
			const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

			if (ibv_query_gid_ex(m->ctx, m->port, (uint32_t)i, &e, 0))
				continue;
			if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			if (!memcmp(e.gid.raw, v4, 12)) {
				best = i;
				break;
			}
			if (best < 0)
				best = i;
		}
		m->gid_index = best < 0 ? 0 : best;
	}
	if (m->gid_index >= 0) {
		union ibv_gid g;

		if (ibv_query_gid(m->ctx, m->port, m->gid_index, &g) == 0)
			memcpy(m->gid, g.raw, 16);
		else
			m->gid_index = -1;
	}
}

/* The firmware version and whether the device is src/emu's (its
 * firmware string says so), into m->fw_ver, m->emulated and m->desc. */
static void describe(gic_mlx5 *m)
{
	struct ibv_device_attr a;

	if (ibv_query_device(m->ctx, &a) == 0)
		snprintf(m->fw_ver, sizeof(m->fw_ver), "%s", a.fw_ver);
	m->emulated = strstr(m->fw_ver, "gic softnic") != NULL;
	snprintf(m->desc, sizeof(m->desc), "%.32s (%s, fw %.40s, %s)", m->name,
		 m->emulated ? "the emulated device: softnic behind rdma-core" : "mlx5",
		 m->fw_ver[0] ? m->fw_ver : "unknown",
		 m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
}

/* Opens dev, checks mlx5 support and the port, allocates the PD. */
static int open_checked(gic_mlx5 *m, struct ibv_device *dev, char *err, size_t len)
{
	const char *name = ibv_get_device_name(dev);
	int rc;

	snprintf(m->name, sizeof(m->name), "%s", name);
	if (!mlx5dv_is_supported(dev)) {
		say(err, len, "%s is not an mlx5 device (mlx5dv_is_supported() is false): the "
			      "mlx5 provider needs a ConnectX", name);
		return ENOTSUP;
	}
	m->ctx = ibv_open_device(dev);
	if (!m->ctx) {
		rc = errno ? errno : EIO;
		say(err, len, "ibv_open_device(%s): %s (permissions on /dev/infiniband?)", name,
		    strerror(rc));
		return rc;
	}
	rc = ibv_query_port(m->ctx, m->port, &m->port_attr);
	if (rc) {
		say(err, len, "ibv_query_port(%s, %u): %s (no such port?)", name, m->port,
		    strerror(rc));
		return rc;
	}
	if (m->port_attr.state != IBV_PORT_ACTIVE) {
		say(err, len, "port %u of %s is not active (%s): cable, subnet manager or link "
			      "down", m->port, name, ibv_port_state_str(m->port_attr.state));
		return ENETDOWN;
	}
	pick_gid(m);
	describe(m);
	m->pd = ibv_alloc_pd(m->ctx);
	if (!m->pd) {
		rc = errno ? errno : ENOMEM;
		say(err, len, "ibv_alloc_pd(%s): %s", name, strerror(rc));
		return rc;
	}
	return 0;
}

gic_mlx5 *gic_mlx5_open(const char *name, uint8_t port, char *err, size_t errlen)
{
	int n = 0, rc;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_device *dev;
	gic_mlx5 *m;

	if (!list) {
		/* ENOSYS: no kernel RDMA subsystem (ib_uverbs) at all. */
		rc = errno;
		say(err, errlen, "no RDMA device: ibv_get_device_list() failed: %s (is the "
				 "ib_uverbs module loaded? softnic needs none)", strerror(rc));
		errno = ENODEV;
		return NULL;
	}
	dev = find_device(list, n, name, err, errlen);
	m = dev ? calloc(1, sizeof(*m)) : NULL;
	rc = dev ? (m ? 0 : ENOMEM) : errno;
	if (m) {
		m->base.ops = &gic_provider_mlx5;
		m->port = port ? port : 1;
		m->gid_index = -1;
		rc = open_checked(m, dev, err, errlen);
	}
	ibv_free_device_list(list);
	if (rc) {
		gic_mlx5_close(m);
		errno = rc;
		return NULL;
	}
	return m;
}

void gic_mlx5_close(gic_mlx5 *m)
{
	if (!m)
		return;
	if (m->fwd && gic_dbfwd_stop(m->fwd, 1000000000ull) == ETIMEDOUT) {
		/* The thread may still read the shadows: leak them. */
		fprintf(stderr, "gic mlx5: doorbell forwarder of %s did not stop in 1 s\n",
			m->name);
		m->shadows = NULL;
	}
	gic_mlx5_unmap_all(m);
	free(m->shadows);
	if (m->gpu_pd)
		ibv_dealloc_pd(m->gpu_pd);
	if (m->pd)
		ibv_dealloc_pd(m->pd);
	if (m->ctx)
		ibv_close_device(m->ctx);
	free(m);
}
