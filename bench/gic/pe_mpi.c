/*
 * bench/gic/pe_mpi.c - loading gic/boot.h's MPI bootstrap at run time for
 * `--launch mpi` (pe_mpi.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pe_mpi.h"

int gic_mpi_built(void)
{
#ifdef GIC_MPI_MODULE
	return 1;
#else
	return 0;
#endif
}

int gic_mpi_launched(char *what, size_t len)
{
	static const char *const vars[] = { "PMI_SIZE", "OMPI_COMM_WORLD_SIZE" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && atoi(v) > 1) {
			snprintf(what, len, "%s=%s", vars[i], v);
			return 1;
		}
	}
	return 0;
}

#ifdef GIC_MPI_MODULE
/* The module's path: GIC_MPI_MODULE, else GIC_MPI_MODULE's file beside
 * the running executable. 0 or errno. */
static int module_path(char *out, size_t len)
{
	const char *env = getenv(GIC_MPI_MODULE_ENV);
	char self[4096];
	ssize_t n;
	char *slash;

	if (env && *env)
		return (size_t)snprintf(out, len, "%s", env) < len ? 0 : ENAMETOOLONG;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return errno ? errno : ENOENT;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		slash[1] = '\0';
	return (size_t)snprintf(out, len, "%s%s", slash ? self : "", GIC_MPI_MODULE) < len
		       ? 0 : ENAMETOOLONG;
}

int gic_mpi_open(const char *sub, gic_boot **b)
{
	typedef gic_boot *(*open_fn)(int *, char ***);
	char path[4096 + 64];
	void *lib;
	open_fn fn;
	int rc = module_path(path, sizeof(path));

	*b = NULL;
	if (rc) {
		fprintf(stderr, "gic %s: --launch mpi: the MPI module's path: %s\n", sub,
			strerror(rc));
		return ENOENT;
	}
	/* RTLD_GLOBAL: MPI libraries that load plugins of their own (Open
	 * MPI's components) need their symbols global. */
	lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	fn = lib ? (open_fn)(void (*)(void))dlsym(lib, "gic_boot_mpi") : NULL;
	if (!fn) {
		const char *why = dlerror();

		fprintf(stderr, "gic %s: --launch mpi: cannot load the MPI module %s: %s (it is "
			"built beside gic where CMake found MPI, and needs the MPI library of "
			"that build; %s names another)\n", sub, path, why ? why : "no gic_boot_mpi",
			GIC_MPI_MODULE_ENV);
		return ENOENT;
	}
	*b = fn(NULL, NULL); /* never unloaded: MPI stays initialised until exit */
	if (!*b) {
		fprintf(stderr, "gic %s: --launch mpi: MPI did not initialise (%s; the MPI "
			"library's text, if any, is above)\n", sub, strerror(errno));
		return EIO;
	}
	return 0;
}
#else
int gic_mpi_open(const char *sub, gic_boot **b)
{
	*b = NULL;
	fprintf(stderr, "gic %s: --launch mpi: this gic was built without MPI (CMake found "
		"none; scripts/install-deps.sh installs mpich)\n", sub);
	return ENOTSUP;
}
#endif
