/*
 * mlx5 provider: choosing the RDMA device nearest a GPU on the PCI tree.
 *
 * sysfs names a PCI device by its path from the root complex, e.g.
 * devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.0
 * (root complex, root port, switch upstream port, downstream port,
 * endpoint). Two devices behind the same switch share more components
 * than two that meet only at the root complex; the NIC that shares the
 * most with the GPU is the one GPUDirect traffic crosses the fewest links
 * to reach.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_internal.h"

int gic_pci_bus_id_normalize(const char *in, char out[13])
{
	unsigned dom = 0, bus, dev, fn;
	char tail;
	int n;

	if (!in || !out || !*in || strspn(in, "0123456789abcdefABCDEF:.") != strlen(in))
		return EINVAL;
	n = sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail);
	if (n != 4) {
		dom = 0;
		n = sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &tail);
		if (n != 3 || strchr(in, ':') != strrchr(in, ':'))
			return EINVAL;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return EINVAL;
	snprintf(out, 13, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

/* The resolved path of link below <root>/devices/, into out; 0 or errno. */
static int pci_path(const char *root_real, const char *link, char *out, size_t len)
{
	char real[PATH_MAX];
	size_t rl = strlen(root_real);

	if (!realpath(link, real))
		return errno ? errno : ENOENT;
	if (strncmp(real, root_real, rl) || strncmp(real + rl, "/devices/", 9))
		return EXDEV; /* resolves outside the tree's devices/ */
	snprintf(out, len, "%s", real + rl + 9);
	return 0;
}

/* Number of leading '/'-separated components a and b share. */
static int shared_components(const char *a, const char *b)
{
	int n = 0;

	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");

		if (la == 0 || la != lb || strncmp(a, b, la))
			return n;
		n++;
		a += la;
		b += lb;
		if (*a != '/' || *b != '/')
			return n;
		a++;
		b++;
	}
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int gic_mlx5_pick_near(const char *sysfs_root, const char *gpu_bus_id, char *name,
		       size_t namelen, int *shared, char *err, size_t errlen)
{
	char bus[13], root_real[PATH_MAX], path[PATH_MAX], gpu[PATH_MAX], dev[PATH_MAX];
	char skipped[256] = "", *names[256];
	int nnames = 0, best = -1, rc;
	const char *best_name = NULL;
	DIR *d;
	struct dirent *e;

	if (!sysfs_root || !name || !namelen)
		return EINVAL;
	if (gic_pci_bus_id_normalize(gpu_bus_id, bus)) {
		gic_mlx5_say(err, errlen, "'%s' is not a PCI bus id (domain:bus:device.function, "
					  "e.g. 0000:05:00.0)", gpu_bus_id ? gpu_bus_id : "(null)");
		return EINVAL;
	}
	if (!realpath(sysfs_root, root_real)) {
		rc = errno;
		gic_mlx5_say(err, errlen, "realpath(%s): %s", sysfs_root, strerror(rc));
		return ENODEV;
	}
	if (snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", root_real, bus) >=
		    (int)sizeof(path) ||
	    pci_path(root_real, path, gpu, sizeof(gpu))) {
		gic_mlx5_say(err, errlen, "GPU %s is not in %s/bus/pci/devices (wrong bus id?)",
			     bus, sysfs_root);
		return ENODEV;
	}
	if (snprintf(path, sizeof(path), "%s/class/infiniband", root_real) >= (int)sizeof(path))
		return ENAMETOOLONG;
	d = opendir(path);
	if (!d) {
		gic_mlx5_say(err, errlen, "no RDMA device: %s cannot be read (%s): no RDMA "
					  "driver loaded", path, strerror(errno));
		return ENODEV;
	}
	while ((e = readdir(d)) && nnames < 256) {
		if (e->d_name[0] == '.')
			continue;
		names[nnames] = strdup(e->d_name);
		if (names[nnames])
			nnames++;
	}
	closedir(d);
	qsort(names, (size_t)nnames, sizeof(names[0]), cmp_names);
	for (int i = 0; i < nnames; i++) {
		int s;

		if (snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", root_real,
			     names[i]) >= (int)sizeof(path) ||
		    pci_path(root_real, path, dev, sizeof(dev))) {
			size_t l = strlen(skipped);

			snprintf(skipped + l, sizeof(skipped) - l, "%s%s", l ? ", " : "", names[i]);
			continue;
		}
		s = shared_components(gpu, dev);
		if (s > best) {
			best = s;
			best_name = names[i];
		}
	}
	rc = 0;
	if (!best_name) {
		gic_mlx5_say(err, errlen, "no RDMA device under %s/class/infiniband%s%s", sysfs_root,
			     skipped[0] ? " with a valid device link; skipped: " : "", skipped);
		rc = ENODEV;
	} else if (best == 0) {
		gic_mlx5_say(err, errlen, "no RDMA device under the PCI root complex of GPU %s "
					  "(%s); name the device to use one across sockets",
			     bus, gpu);
		rc = ENOENT;
	} else {
		snprintf(name, namelen, "%s", best_name);
		if (shared)
			*shared = best;
		if (skipped[0])
			gic_mlx5_say(err, errlen, "skipped devices with a missing or bad link: %s",
				     skipped);
	}
	for (int i = 0; i < nnames; i++)
		free(names[i]);
	return rc;
}

gic_mlx5 *gic_mlx5_open_near(const char *gpu_bus_id, uint8_t port, char *err, size_t errlen)
{
	char name[64];
	int rc = gic_mlx5_pick_near("/sys", gpu_bus_id, name, sizeof(name), NULL, err, errlen);

	if (rc) {
		errno = rc;
		return NULL;
	}
	return gic_mlx5_open(name, port, err, errlen);
}
