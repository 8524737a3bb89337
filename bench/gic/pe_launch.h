/*
 * bench/gic/pe_launch.h - running a library path's PEs (processing
 * elements) as processes of this program: what the NVSHMEM path
 * (nvshmem_pe.h) and the NCCL GIN path (nccl_pe.h) share. Each library
 * keeps its job, its environment, its messages and its PE code.
 *
 * Such a library wants one process per GPU, and the driver runs none of it
 * (it may already hold a CUDA context, and must not need a GPU just to
 * start the PEs). gic_pl_run() starts npes fresh processes of this program
 * (/proc/self/exe), their stdout on our stderr (our stdout carries the
 * table), with the library's hidden subcommand
 *     gic <subcommand> <rank> <npes> <in_fd> <out_fd>
 * PE 0 makes the library's unique id and sends it; only then does the
 * driver start the other PEs and relay the id to them. A spec with
 * start_all starts every PE at once and relays no id (gic lat --procs:
 * the PEs exchange connection records through GATHER instead).
 *
 * Protocol (pipes between processes of one build, host byte order):
 *   driver -> PE: the library's job (its first member: the library's magic,
 *                 a uint32); then, to every PE but 0, one UID record.
 *   PE -> driver: records, each a gic_pl_rec header and len bytes:
 *     SKIP     the library's reason (spec skip_len bytes): the path cannot
 *              run here; the first one is handed back to the library
 *     UID      the library's unique id (PE 0, once, before it joins)
 *     RESULT   gic_result, phase set (PE 0)
 *     VERDICT  int32: 1 when every payload of the phase checked out (PE 1)
 *     NOTE     text with its NUL (at most GIC_PL_NOTE_MAX bytes): the
 *              driver prints "gic <sub>: <text>"
 *     DONE     nothing: the PE finished its job and left the library
 *     GATHER   1..GIC_PL_GATHER_MAX bytes, the same length from every PE:
 *              once every PE has sent its own, the driver sends each PE
 *              one GATHER record of all of them, rank 0 first (an
 *              allgather through the driver; again for the next round)
 * A result's validated stays 1 only when PE 0 set it and the verdict of
 * its phase is 1; the driver combines them once every PE has ended.
 *
 * Time limits: each PE arms alarm() with the job's limit (the library's
 * own waits have none) and reads its input within GIC_PL_INPUT_MS; the
 * driver allows the PEs GIC_PL_SLACK_S more than that limit in all, then
 * kills them; after a SKIP it may give the others a grace to leave (the
 * spec's skip_grace_s: they may be waiting inside the library for the PE
 * that skipped). A PE that closes its pipe without DONE or SKIP (it died,
 * or the library ended it) ends the run, since the others would wait for
 * it forever; every PE's end is reported by its exit status.
 *
 * Errors: 0 or a positive errno. The PE-side helpers that end in a PE's
 * death (gic_pl_die and those documented to call it) do not return on
 * failure: a PE that fails cannot finish the collectives its peers wait
 * in, and the driver reports its exit status and stops the others.
 */
#ifndef GIC_BENCH_PE_LAUNCH_H
#define GIC_BENCH_PE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	GIC_PL_MAX_PES = 8,      /* PEs of one run */
	GIC_PL_SKIP_MAX = 512,   /* bytes of a SKIP's payload */
	GIC_PL_NOTE_MAX = 256,   /* bytes of a NOTE, with its NUL */
	GIC_PL_SLACK_S = 10,     /* the driver's time beyond the PEs' own limit */
	GIC_PL_INPUT_MS = 30000, /* a PE's limit on reading its job and unique id */
	GIC_PL_JOB_MAX = 32768,  /* bytes of a job: with the UID record it fits an
				  * empty pipe (64 KiB), so no write to a PE waits */
};

enum { GIC_PL_GATHER_MAX = 4096 }; /* bytes of one PE's GATHER payload */

/* A record's payload is at most this many bytes (a longer header means the
 * pipe is garbled). */
#define GIC_PL_REC_MAX (sizeof(gic_result) + GIC_PL_GATHER_MAX)

enum {
	GIC_PL_REC_SKIP = 1,
	GIC_PL_REC_UID = 2,
	GIC_PL_REC_RESULT = 3,
	GIC_PL_REC_VERDICT = 4,
	GIC_PL_REC_DONE = 5,
	GIC_PL_REC_NOTE = 6,
	GIC_PL_REC_GATHER = 7,
};

typedef struct gic_pl_rec {
	uint32_t magic;  /* the library's */
	uint32_t type;   /* GIC_PL_REC_* */
	int32_t phase;   /* RESULT, VERDICT: the measurement the record belongs to */
	uint32_t len;    /* payload bytes that follow */
} gic_pl_rec;

/* ------------------------------------------------------------------ */
/* Driver side. */

/* What a library's launcher runs. */
typedef struct gic_pl_spec {
	const char *sub;        /* the experiment, for "gic <sub>: ..." */
	const char *lib;        /* "NVSHMEM", "NCCL": "<lib> PE 1 exited ..." */
	const char *subcommand; /* the PEs' hidden subcommand */
	const char *program;    /* the PEs' program, beside this one; NULL: this one */
	uint32_t magic;         /* of the job and of every record */
	const void *job;        /* sent to every PE first; starts with magic */
	size_t job_len;         /* 4..GIC_PL_JOB_MAX */
	int npes;               /* 1..GIC_PL_MAX_PES */
	int limit_s;            /* the PEs' own time limit (in the job) */
	const char *limit_env;  /* the variable that sets it, named when it runs out */
	int max_results;        /* RESULT records accepted (>= 0) */
	int nphases;            /* RESULT and VERDICT phases are 0..nphases-1 */
	uint32_t skip_len;      /* a SKIP's payload, 1..GIC_PL_SKIP_MAX bytes */
	int skip_grace_s;       /* after a SKIP, the others' time to leave before
				 * they are stopped; 0: no grace, the time limit */
	int start_all;          /* 1: every PE starts at once, no UID relayed */
} gic_pl_spec;

/* What gic_pl_run() hands back about a skip. */
typedef struct gic_pl_skip {
	int skipped;                   /* 1: a PE skipped and nothing failed */
	uint8_t data[GIC_PL_SKIP_MAX]; /* the first SKIP's payload */
} gic_pl_skip;

/* The PEs' time limit in seconds: the integer in environment variable env
 * when it is one in 1..86399, else dflt. */
int gic_pl_limit_s(const char *env, int dflt);

/* Sets each variable of pairs (name, value, name, value, ..., NULL) for the
 * PEs unless the user set it already (the driver itself reads none). */
void gic_pl_env_defaults(const char *const *pairs);

/* Runs s: starts PE 0 and sends it the job, starts the others when PE 0's
 * unique id comes and relays it (start_all: starts every PE at once and
 * sends each the job), answers each round of GATHER records, collects
 * records until every PE has closed its pipe, reaps them all, and prints one line per PE that failed
 * ("gic <sub>: <lib> PE <rank> exited with status 1 before it finished
 * ..."). Without a failure and without a SKIP it emits PE 0's results
 * into sink, each validated only with its phase's verdict (a missing or
 * bad verdict is printed); after a SKIP it emits nothing, sets
 * skip->skipped and copies the first SKIP's payload (the library prints
 * the reason). SIGPIPE is ignored while it runs. Every wait has a time
 * limit: s->limit_s + GIC_PL_SLACK_S in all, then the PEs are killed.
 * Errors: EINVAL (a bad spec), ETIMEDOUT (the limit, said on stderr naming
 * s->limit_env), EIO (a PE failed), EPROTO (a malformed record, said),
 * ENOMEM, or the errno of a failed pipe, fork or write. */
int gic_pl_run(const gic_pl_spec *s, gic_sink *sink, gic_pl_skip *skip);

/* Emits res[0..n) into sink, each validated only when the verdict of its
 * phase (verdict[phase[i]]: -1 none, 0 a wrong payload, 1 every payload
 * checked out) is 1; a missing or bad verdict is printed ("gic <sub>:
 * <name> <metric>: PE 1 sent no verdict"). What gic_pl_run does with the
 * PEs' records, and --launch mpi (pe_pair.h) with its own. 0 or the
 * sink's errno. */
int gic_pl_emit_checked(const char *sub, gic_result *res, const int *phase, int n,
			const int *verdict, gic_sink *sink);

/* ------------------------------------------------------------------ */
/* PE side (host code of the PE processes; callable from CUDA C++). */

/* Who this PE is: filled in by the library's PE main before anything
 * else, used by every helper below. */
typedef struct gic_pl_pe {
	const char *lib;   /* "NVSHMEM", "NCCL" */
	const char *sub;   /* the experiment ("lat", ...) once the job is read */
	uint32_t magic;    /* the library's */
	int rank, npes;
	int out_fd;        /* records to the driver */
} gic_pl_pe;

/* Fills in *pe: sub is what messages name until the job says better. */
void gic_pl_pe_init(gic_pl_pe *pe, const char *lib, const char *sub, uint32_t magic, int rank,
		    int npes, int out_fd);

/* Parses the hidden subcommand's arguments (argv: gic <subcommand> <rank>
 * <npes> <in_fd> <out_fd>) into v[4]; 0, or EINVAL after printing "gic
 * <subcommand>: internal subcommand of <what>; expected ..." (wrong count),
 * "expected an integer in 0..4096, got '<arg>'" or "rank R out of N PEs". */
int gic_pl_pe_args(int argc, char **argv, const char *what, int v[4]);

/* Prints "gic <sub>: <lib> PE <rank>: <what>: <why>" and ends the process
 * with status 1. */
void gic_pl_die(const gic_pl_pe *pe, const char *what, const char *why)
	__attribute__((noreturn));

/* Arms the PE's own time limit: after limit_s seconds it prints "gic
 * <sub>: <lib> PE <rank>: time limit (<limit_s> s) reached" and ends the
 * process with status 124. */
void gic_pl_pe_alarm(const gic_pl_pe *pe, int limit_s);

/* Reads the job (len bytes, starting with the library's magic) from in_fd
 * within GIC_PL_INPUT_MS; dies ("reading the job") on a read error or
 * another magic. The caller checks the rest. */
void gic_pl_read_job(const gic_pl_pe *pe, int in_fd, void *job, size_t len);

/* Reads the UID record the driver relays (exactly len bytes of payload)
 * into uid within GIC_PL_INPUT_MS; dies ("reading the unique id") else. */
void gic_pl_read_uid(const gic_pl_pe *pe, int in_fd, void *uid, uint32_t len);

/* Sends one record to the driver; dies ("writing to the driver") when it
 * cannot. */
void gic_pl_send(const gic_pl_pe *pe, uint32_t type, int32_t phase, const void *data,
		 uint32_t len);

/* The allgather through the driver: sends mine (len bytes, 1..
 * GIC_PL_GATHER_MAX, the same len on every PE) as GATHER and reads every
 * PE's into all (npes * len bytes, rank order) within limit_ms; dies
 * ("exchanging records") when it cannot. Every PE must take part. */
void gic_pl_allgather(const gic_pl_pe *pe, int in_fd, const void *mine, uint32_t len, void *all,
		      int limit_ms);

/* Sends the VERDICT of phase: ok 1 when every payload checked out. */
void gic_pl_verdict(const gic_pl_pe *pe, int32_t phase, int ok);

/* Sends result r of phase (RESULT). */
void gic_pl_emit(const gic_pl_pe *pe, int32_t phase, const gic_result *r);

/* Milliseconds of CLOCK_MONOTONIC, for the PEs' host-side time limits. */
uint64_t gic_pl_now_ms(void);

/* ------------------------------------------------------------------ */
/* Record I/O under both sides. */

/* Writes a header (magic, type, phase, len) and len bytes of data to fd; 0
 * or errno (EPIPE when the reader is gone; SIGPIPE must be ignored). */
int gic_pl_write_rec(int fd, uint32_t magic, uint32_t type, int32_t phase, const void *data,
		     uint32_t len);

/* Reads exactly len bytes from fd within limit_ms; 0, ETIMEDOUT, EPIPE
 * (end of file: the writer is gone), or another errno. */
int gic_pl_read_full(int fd, void *buf, size_t len, int limit_ms);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_PE_LAUNCH_H */
