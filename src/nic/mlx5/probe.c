/*
 * gic-mlx5-probe [device] [port]: opens an RDMA device through the mlx5
 * provider and prints what it found, or says clearly why it cannot (no
 * device, not mlx5, port down, permissions). Exit 0 when the device is
 * usable, 1 when not, 2 for bad arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/mlx5_provider.h"

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	char *end = NULL;
	long port = argc > 2 ? strtol(argv[2], &end, 10) : 1;
	char err[512] = "";
	gic_mlx5 *m;

	if (argc > 3 || (argc > 2 && (*end || port < 1 || port > 255))) {
		fprintf(stderr, "usage: gic-mlx5-probe [device] [port 1..255]\n");
		return 2;
	}
	m = gic_mlx5_open(name, (uint8_t)port, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "gic-mlx5-probe: %s [errno %d: %s]\n", err, errno, strerror(errno));
		return 1;
	}
	printf("opened mlx5 device %s, port %u: lid 0x%x, active MTU %d, link layer %s\n", m->name,
	       m->port, m->port_attr.lid, 128 << m->port_attr.active_mtu,
	       m->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand");
	gic_mlx5_close(m);
	return 0;
}
