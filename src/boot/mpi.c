/*
 * MPI bootstrap: one PE per process. Barrier and allgather are MPI's
 * nonblocking collectives (MPI_Ibarrier, MPI_Iallgather) polled with
 * MPI_Test until a deadline, so that a PE that vanished gives ETIMEDOUT
 * instead of a hang.
 *
 * A collective that timed out is still in flight inside MPI and may write
 * its buffers later: the handle's staging buffers are then abandoned (never
 * freed, never reused) and the handle fails every later call at once.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "boot_internal.h"

typedef struct mpi_boot {
	gic_boot base;     /* first member */
	MPI_Comm comm;     /* a duplicate of MPI_COMM_WORLD, errors returned */
	int owns_init;     /* MPI_Init was ours: MPI_Finalize at free */
	int failed;        /* a collective timed out or failed */
	uint64_t *lens;    /* staging: every PE's allgather length */
	uint8_t *buf;      /* staging: size * cap bytes */
	uint8_t *send;     /* staging: this PE's cap bytes */
	size_t cap;
} mpi_boot;

static const gic_boot_ops mpi_ops;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Records an MPI error code's text for call what; returns EIO. */
static int mpi_fail(mpi_boot *b, const char *what, int code)
{
	char text[MPI_MAX_ERROR_STRING];
	int n = 0;

	if (MPI_Error_string(code, text, &n) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error %d", code);
	gic_boot_set_error(&b->base, "mpi %s: PE %d of %d: %s", what, b->base.rank, b->base.size,
			   text);
	b->failed = 1;
	return EIO;
}

/* Polls req until it completes or timeout_ns passes. 0, ETIMEDOUT or EIO;
 * after either error the request stays in flight (b->failed). */
static int mpi_wait(mpi_boot *b, MPI_Request *req, const char *what, uint64_t timeout_ns)
{
	uint64_t deadline = now_ns() + timeout_ns;

	for (unsigned spins = 0;; spins++) {
		int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);

		if (rc != MPI_SUCCESS)
			return mpi_fail(b, what, rc);
		if (done)
			return 0;
		if (now_ns() > deadline) {
			gic_boot_set_error(&b->base, "mpi %s: PE %d of %d: the other PEs did not "
					   "complete it within %llu ms (a PE exited, was killed "
					   "or is stuck)", what, b->base.rank, b->base.size,
					   (unsigned long long)(timeout_ns / 1000000u));
			b->failed = 1;
			return ETIMEDOUT;
		}
		if (spins > 1000) { /* a bootstrap is not latency-critical */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
}

static int broken(mpi_boot *b, const char *what)
{
	if (!b->failed)
		return 0;
	gic_boot_set_error(&b->base, "mpi %s: PE %d: an earlier collective of this handle "
			   "failed; the group is broken", what, b->base.rank);
	return ETIMEDOUT;
}

static int mpi_barrier(gic_boot *base, uint64_t timeout_ns)
{
	mpi_boot *b = (mpi_boot *)base;
	MPI_Request req;
	int rc = broken(b, "barrier");

	if (rc)
		return rc;
	rc = MPI_Ibarrier(b->comm, &req);
	if (rc != MPI_SUCCESS)
		return mpi_fail(b, "barrier (MPI_Ibarrier)", rc);
	return mpi_wait(b, &req, "barrier", timeout_ns);
}

/* Makes the staging buffers hold len bytes per PE. */
static int stage_reserve(mpi_boot *b, size_t len)
{
	uint8_t *buf, *send;

	if (len <= b->cap)
		return 0;
	buf = malloc((size_t)b->base.size * len);
	send = malloc(len);
	if (!buf || !send) {
		free(buf);
		free(send);
		return ENOMEM;
	}
	free(b->buf);
	free(b->send);
	b->buf = buf;
	b->send = send;
	b->cap = len;
	return 0;
}

static int mpi_allgather(gic_boot *base, const void *mine, size_t len, void *all,
			 uint64_t timeout_ns)
{
	mpi_boot *b = (mpi_boot *)base;
	uint64_t t0 = now_ns(), my_len = len, spent;
	MPI_Request req;
	int rc = broken(b, "allgather");

	if (rc)
		return rc;
	if (len > (size_t)1 << 30) {
		gic_boot_set_error(base, "mpi allgather: %zu bytes per PE (at most 1 GiB)", len);
		return EINVAL;
	}
	/* Lengths first: every PE learns whether they agree, so every PE
	 * returns the same outcome and the collectives stay matched. */
	memcpy(&b->lens[b->base.rank], &my_len, sizeof(my_len));
	rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->lens, 1, MPI_UINT64_T, b->comm,
			    &req);
	if (rc != MPI_SUCCESS)
		return mpi_fail(b, "allgather (MPI_Iallgather of lengths)", rc);
	rc = mpi_wait(b, &req, "allgather (lengths)", timeout_ns);
	if (rc) {
		b->lens = NULL; /* abandoned: MPI may still write it */
		return rc;
	}
	for (int r = 0; r < b->base.size; r++) {
		if (b->lens[r] != my_len) {
			gic_boot_set_error(base, "mpi allgather: PE %d gave %llu bytes, PE %d %zu "
					   "(every PE must give the same length)", r,
					   (unsigned long long)b->lens[r], b->base.rank, len);
			return EINVAL;
		}
	}
	/* Every PE agrees on len, so every PE fails or passes this alike. */
	if (stage_reserve(b, len)) {
		gic_boot_set_error(base, "mpi allgather: no memory for %d x %zu bytes",
				   b->base.size, len);
		b->failed = 1; /* the others will wait for us in vain */
		return ENOMEM;
	}
	memcpy(b->send, mine, len);
	rc = MPI_Iallgather(b->send, (int)len, MPI_BYTE, b->buf, (int)len, MPI_BYTE, b->comm, &req);
	if (rc != MPI_SUCCESS)
		return mpi_fail(b, "allgather (MPI_Iallgather)", rc);
	spent = now_ns() - t0;
	rc = mpi_wait(b, &req, "allgather", timeout_ns > spent ? timeout_ns - spent : 0);
	if (rc) {
		b->buf = b->send = NULL; /* abandoned: MPI may still use them */
		b->cap = 0;
		return rc;
	}
	memcpy(all, b->buf, (size_t)b->base.size * len);
	return 0;
}

static void mpi_free(gic_boot *base)
{
	mpi_boot *b = (mpi_boot *)base;
	int fin = 0;

	/* A failed handle has a collective in flight on comm: freeing comm
	 * or its buffers under it is not allowed, and MPI_Finalize would wait
	 * for the PE that vanished (MPICH's does), so it is skipped too. */
	if (!b->failed) {
		MPI_Comm_free(&b->comm);
		free(b->lens);
		free(b->buf);
		free(b->send);
		if (b->owns_init && MPI_Finalized(&fin) == MPI_SUCCESS && !fin)
			MPI_Finalize();
	}
	free(b);
}

gic_boot *gic_boot_mpi(int *argc, char ***argv)
{
	mpi_boot *b = calloc(1, sizeof(*b));
	int inited = 0, rc;

	if (!b)
		return NULL;
	b->base.ops = &mpi_ops;
	rc = MPI_Initialized(&inited);
	if (rc == MPI_SUCCESS && !inited) {
		rc = MPI_Init(argc, argv);
		b->owns_init = rc == MPI_SUCCESS;
	}
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_dup(MPI_COMM_WORLD, &b->comm);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_set_errhandler(b->comm, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(b->comm, &b->base.rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(b->comm, &b->base.size);
	if (rc != MPI_SUCCESS) {
		char text[MPI_MAX_ERROR_STRING];
		int n = 0;

		if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS)
			snprintf(text, sizeof(text), "MPI error %d", rc);
		fprintf(stderr, "gic_boot_mpi: MPI initialisation failed: %s\n", text);
		free(b);
		errno = EIO;
		return NULL;
	}
	b->lens = calloc((size_t)b->base.size, sizeof(*b->lens));
	if (!b->lens) {
		b->failed = 0;
		mpi_free(&b->base);
		errno = ENOMEM;
		return NULL;
	}
	return &b->base;
}

static const gic_boot_ops mpi_ops = {
	.name = "mpi",
	.barrier = mpi_barrier,
	.allgather = mpi_allgather,
	.free = mpi_free,
};
