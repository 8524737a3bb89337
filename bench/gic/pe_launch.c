/*
 * bench/gic/pe_launch.c - running a library path's PEs as processes of
 * this program (pe_launch.h): the driver's spawning, record loop, time
 * limit and reaping, and the PE side's record and input helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gic.h"
#include "pe_launch.h"

/* How long the driver lets PEs that are ending finish exiting before it
 * stops the rest with SIGKILL (pl_kill_all). */
enum { PL_EXIT_GRACE_MS = 200 };

uint64_t gic_pl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* Record I/O. */

/* Writes all of buf to fd; 0 or errno. No limit of its own: the driver's
 * writes fit an empty pipe (GIC_PL_JOB_MAX), a PE's own alarm bounds its
 * writes, and a reader's death ends a write (EPIPE). */
static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t k = write(fd, p, len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : EIO;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

int gic_pl_write_rec(int fd, uint32_t magic, uint32_t type, int32_t phase, const void *data,
		     uint32_t len)
{
	gic_pl_rec h = { magic, type, phase, len };
	int rc = write_full(fd, &h, sizeof(h));

	return rc || !len ? rc : write_full(fd, data, len);
}

int gic_pl_read_full(int fd, void *buf, size_t len, int limit_ms)
{
	uint8_t *p = buf;
	uint64_t deadline = gic_pl_now_ms() + (uint64_t)limit_ms;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t t = gic_pl_now_ms();
		ssize_t k;

		if (t >= deadline)
			return ETIMEDOUT;
		if (poll(&pf, 1, (int)(deadline - t)) < 0 && errno != EINTR)
			return errno;
		if (!pf.revents)
			continue;
		k = read(fd, p, len);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return k < 0 ? errno : EPIPE;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* PE side. */

int gic_pl_pe_args(int argc, char **argv, const char *what, int v[4])
{
	const char *sub = argc > 1 ? argv[1] : "?";

	if (argc != 6) {
		fprintf(stderr, "gic %s: internal subcommand of %s; expected <rank> <nranks> "
			"<in_fd> <out_fd>\n", sub, what);
		return EINVAL;
	}
	for (int i = 0; i < 4; i++) {
		char *end;
		long x;

		errno = 0;
		x = strtol(argv[2 + i], &end, 10);
		if (end == argv[2 + i] || *end || errno || x < 0 || x > 4096) {
			fprintf(stderr, "gic %s: expected an integer in 0..4096, got '%s'\n", sub,
				argv[2 + i]);
			return EINVAL;
		}
		v[i] = (int)x;
	}
	if (v[0] >= v[1]) {
		fprintf(stderr, "gic %s: rank %d out of %d PEs\n", sub, v[0], v[1]);
		return EINVAL;
	}
	return 0;
}

void gic_pl_pe_init(gic_pl_pe *pe, const char *lib, const char *sub, uint32_t magic, int rank,
		    int npes, int out_fd)
{
	memset(pe, 0, sizeof(*pe));
	pe->lib = lib;
	pe->sub = sub;
	pe->magic = magic;
	pe->rank = rank;
	pe->npes = npes;
	pe->out_fd = out_fd;
}

void gic_pl_die(const gic_pl_pe *pe, const char *what, const char *why)
{
	fprintf(stderr, "gic %s: %s PE %d: %s: %s\n", pe->sub, pe->lib, pe->rank, what, why);
	fflush(stderr);
	_exit(1);
}

static char alarm_msg[160];

/* The PE's own time limit (SIGALRM): says so and ends the process, with
 * async-signal-safe calls only. */
static void on_alarm(int sig)
{
	ssize_t k = write(2, alarm_msg, strlen(alarm_msg));

	(void)sig, (void)k;
	_exit(124);
}

void gic_pl_pe_alarm(const gic_pl_pe *pe, int limit_s)
{
	snprintf(alarm_msg, sizeof(alarm_msg), "gic %s: %s PE %d: time limit (%d s) reached\n",
		 pe->sub, pe->lib, pe->rank, limit_s);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)limit_s);
}

void gic_pl_read_job(const gic_pl_pe *pe, int in_fd, void *job, size_t len)
{
	uint32_t magic = 0;
	int rc = len >= sizeof(magic) ? gic_pl_read_full(in_fd, job, len, GIC_PL_INPUT_MS) : EINVAL;

	if (!rc)
		memcpy(&magic, job, sizeof(magic));
	if (rc || magic != pe->magic)
		gic_pl_die(pe, "reading the job", rc ? strerror(rc) : "malformed");
}

void gic_pl_read_uid(const gic_pl_pe *pe, int in_fd, void *uid, uint32_t len)
{
	gic_pl_rec h;
	int rc = gic_pl_read_full(in_fd, &h, sizeof(h), GIC_PL_INPUT_MS);

	if (!rc && (h.magic != pe->magic || h.type != GIC_PL_REC_UID || h.len != len))
		rc = EPROTO;
	if (!rc)
		rc = gic_pl_read_full(in_fd, uid, len, GIC_PL_INPUT_MS);
	if (rc)
		gic_pl_die(pe, "reading the unique id", strerror(rc));
}

void gic_pl_send(const gic_pl_pe *pe, uint32_t type, int32_t phase, const void *data,
		 uint32_t len)
{
	int rc = gic_pl_write_rec(pe->out_fd, pe->magic, type, phase, data, len);

	if (rc)
		gic_pl_die(pe, "writing to the driver", strerror(rc));
}

void gic_pl_allgather(const gic_pl_pe *pe, int in_fd, const void *mine, uint32_t len, void *all,
		      int limit_ms)
{
	gic_pl_rec h;
	int rc = len >= 1 && len <= GIC_PL_GATHER_MAX ? 0 : EINVAL;

	if (!rc)
		rc = gic_pl_write_rec(pe->out_fd, pe->magic, GIC_PL_REC_GATHER, 0, mine, len);
	if (!rc)
		rc = gic_pl_read_full(in_fd, &h, sizeof(h), limit_ms);
	if (!rc && (h.magic != pe->magic || h.type != GIC_PL_REC_GATHER ||
		    h.len != (uint32_t)pe->npes * len))
		rc = EPROTO;
	if (!rc)
		rc = gic_pl_read_full(in_fd, all, h.len, limit_ms);
	if (rc)
		gic_pl_die(pe, "exchanging records", rc == ETIMEDOUT ? "no answer within the limit "
			   "(another PE did not send its record)" : strerror(rc));
}

void gic_pl_verdict(const gic_pl_pe *pe, int32_t phase, int ok)
{
	int32_t v = ok;

	gic_pl_send(pe, GIC_PL_REC_VERDICT, phase, &v, sizeof(v));
}

void gic_pl_emit(const gic_pl_pe *pe, int32_t phase, const gic_result *r)
{
	gic_pl_send(pe, GIC_PL_REC_RESULT, phase, r, sizeof(*r));
}

/* ------------------------------------------------------------------ */
/* Driver side. */

int gic_pl_limit_s(const char *env, int dflt)
{
	const char *e = getenv(env);
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v < 86400 ? (int)v : dflt;
}

void gic_pl_env_defaults(const char *const *pairs)
{
	for (; pairs[0] && pairs[1]; pairs += 2)
		setenv(pairs[0], pairs[1], 0);
}

typedef struct pl_proc {
	pid_t pid;           /* 0: not started */
	int to_fd, from_fd;  /* our ends: job and UID to the PE; records from it */
	uint8_t *buf;        /* bytes read and not yet parsed */
	size_t len, cap;
	int eof, done, skipped, reaped, status;
	int killed;          /* we sent SIGKILL */
} pl_proc;

typedef struct pl_run {
	const gic_pl_spec *s;
	pl_proc pe[GIC_PL_MAX_PES];
	int skipped;         /* a SKIP arrived: skip holds the first one */
	uint8_t skip[GIC_PL_SKIP_MAX];
	int grace_over;      /* the others outstayed the grace after a SKIP */
	gic_result *res;     /* [max_results] */
	int *phase;          /* [max_results]: the phase of each result */
	int nres;
	int *verdict;        /* [nphases]: -1 none, 0 bad, 1 good */
	uint8_t *gather;     /* [npes * GIC_PL_GATHER_MAX]: this round's GATHER records */
	uint32_t gather_len; /* their length (0: none yet this round) */
	int gather_n;        /* PEs that sent theirs this round */
	int gather_have[GIC_PL_MAX_PES];
} pl_run;

/* The path of program, a file beside the running executable, into out
 * (/proc/self/exe when program is NULL). 0 or errno. */
static int pl_program_path(const char *program, char *out, size_t len)
{
	char self[4096];
	ssize_t n;
	char *slash;

	if (!program) {
		snprintf(out, len, "/proc/self/exe");
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return errno ? errno : ENOENT;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (slash)
		slash[1] = 0;
	if ((size_t)snprintf(out, len, "%s%s", slash ? self : "", program) >= len)
		return ENAMETOOLONG;
	return 0;
}

/* Starts PE rank: a fresh process of this program (or of the spec's
 * program beside it), its stdout on our stderr; 0 or errno. */
static int pl_spawn(pl_run *R, int rank)
{
	pl_proc *p = &R->pe[rank];
	int to[2], from[2];
	char a[4][16];
	char *argv[7];
	char path[4096 + 64], nope[4096 + 128];
	size_t nope_len;
	int prc = pl_program_path(R->s->program, path, sizeof(path));

	if (prc)
		return prc;
	nope_len = (size_t)snprintf(nope, sizeof(nope), "gic: cannot execute the PE program %s\n",
				    path);
	if (nope_len >= sizeof(nope))
		nope_len = sizeof(nope) - 1;

	if (pipe2(to, O_CLOEXEC))
		return errno;
	if (pipe2(from, O_CLOEXEC)) {
		int rc = errno;

		close(to[0]);
		close(to[1]);
		return rc;
	}
	snprintf(a[0], sizeof(a[0]), "%d", rank);
	snprintf(a[1], sizeof(a[1]), "%d", R->s->npes);
	snprintf(a[2], sizeof(a[2]), "%d", to[0]);
	snprintf(a[3], sizeof(a[3]), "%d", from[1]);
	argv[0] = (char *)(R->s->program ? R->s->program : "gic");
	argv[1] = (char *)R->s->subcommand;
	for (int i = 0; i < 4; i++)
		argv[2 + i] = a[i];
	argv[6] = NULL;
	fflush(NULL);
	p->pid = fork();
	if (p->pid == 0) {
		/* Only async-signal-safe calls between fork and exec. */
		if (fcntl(to[0], F_SETFD, 0) || fcntl(from[1], F_SETFD, 0) || dup2(2, 1) < 0)
			_exit(127);
		execv(path, argv);
		nope_len = (size_t)write(2, nope, nope_len); /* formatted before fork */
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	if (p->pid < 0) {
		int rc = errno;

		close(to[1]);
		close(from[0]);
		p->pid = 0;
		return rc;
	}
	p->to_fd = to[1];
	p->from_fd = from[0];
	return 0;
}

/* Reaps every started PE that has exited; returns how many are left. */
static int pl_reap_exited(pl_run *R)
{
	int left = 0;

	for (int i = 0; i < R->s->npes; i++) {
		pl_proc *p = &R->pe[i];

		if (p->pid <= 0 || p->reaped)
			continue;
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			p->reaped = 1;
		else
			left++;
	}
	return left;
}

/* SIGKILL to every started PE that has not exited yet. A PE whose pipe
 * just closed may still be exiting (a process's descriptors close before
 * it can be reaped): a short grace first lets its own end (an exit
 * status, another's signal) be told apart from the driver's SIGKILL. */
static void pl_kill_all(pl_run *R)
{
	uint64_t until = gic_pl_now_ms() + PL_EXIT_GRACE_MS;
	struct timespec ms = { 0, 1000000 };

	while (pl_reap_exited(R) && gic_pl_now_ms() < until)
		nanosleep(&ms, NULL);
	for (int i = 0; i < R->s->npes; i++) {
		pl_proc *p = &R->pe[i];

		/* A PE whose pipe had closed was exiting already (a CUDA
		 * process killed from outside can take seconds past the grace
		 * to tear its contexts down): a SIGKILL it ends with is its own,
		 * not the driver's. */
		if (p->pid > 0 && !p->reaped)
			p->killed = !kill(p->pid, SIGKILL) && !p->eof;
	}
}

/* PE 0's unique id: starts every other PE and sends it its job and the id;
 * 0 or errno (said). */
static int pl_relay_uid(pl_run *R, const uint8_t *uid, uint32_t len)
{
	const gic_pl_spec *s = R->s;
	int rc = 0;

	for (int r = 1; r < s->npes && !rc; r++) {
		rc = pl_spawn(R, r);
		if (!rc)
			rc = write_full(R->pe[r].to_fd, s->job, s->job_len);
		if (!rc)
			rc = gic_pl_write_rec(R->pe[r].to_fd, s->magic, GIC_PL_REC_UID, 0, uid, len);
		if (rc)
			fprintf(stderr, "gic %s: could not start %s PE %d: %s\n", s->sub, s->lib, r,
				strerror(rc));
	}
	return rc;
}

/* PE rank's GATHER record: kept; once every PE has sent one, all of them
 * go to every PE and the next round starts. 0, EPROTO (a second record of
 * the round, or another length: the caller says so), or the errno of a
 * write (said). */
static int pl_gather(pl_run *R, int rank, const uint8_t *data, uint32_t len)
{
	const gic_pl_spec *s = R->s;
	int rc = 0;

	if (len < 1 || len > GIC_PL_GATHER_MAX || R->gather_have[rank] ||
	    (R->gather_n && len != R->gather_len))
		return EPROTO;
	memcpy(R->gather + (size_t)rank * len, data, len);
	R->gather_len = len;
	R->gather_have[rank] = 1;
	if (++R->gather_n < s->npes)
		return 0;
	for (int r = 0; r < s->npes && !rc; r++) {
		rc = gic_pl_write_rec(R->pe[r].to_fd, s->magic, GIC_PL_REC_GATHER, 0, R->gather,
				      (uint32_t)s->npes * len);
		if (rc)
			fprintf(stderr, "gic %s: sending the records to %s PE %d: %s\n", s->sub,
				s->lib, r, strerror(rc));
	}
	memset(R->gather_have, 0, sizeof(R->gather_have));
	R->gather_n = 0;
	return rc;
}

/* Handles one record from PE rank; 0 or errno (a malformed record: EPROTO,
 * said). */
static int pl_record(pl_run *R, int rank, const gic_pl_rec *h, const uint8_t *data)
{
	const gic_pl_spec *s = R->s;
	int phase_ok = h->phase >= 0 && h->phase < s->nphases;

	switch (h->type) {
	case GIC_PL_REC_SKIP:
		if (h->len != s->skip_len)
			break;
		if (!R->skipped)
			memcpy(R->skip, data, h->len);
		R->skipped = R->pe[rank].skipped = 1;
		return 0;
	case GIC_PL_REC_UID:
		if (rank != 0 || s->start_all || (s->npes > 1 && R->pe[1].pid)) /* once, PE 0 */
			break;
		return pl_relay_uid(R, data, h->len);
	case GIC_PL_REC_GATHER: {
		int rc = pl_gather(R, rank, data, h->len);

		if (rc != EPROTO)
			return rc;
		break;
	}
	case GIC_PL_REC_RESULT: {
		gic_result *r = &R->res[R->nres];

		if (rank != 0 || h->len != sizeof(gic_result) || R->nres >= s->max_results ||
		    !phase_ok)
			break;
		memcpy(r, data, sizeof(*r));
		r->experiment[sizeof(r->experiment) - 1] = r->name[sizeof(r->name) - 1] = '\0';
		r->metric[sizeof(r->metric) - 1] = r->unit[sizeof(r->unit) - 1] = '\0';
		r->params[sizeof(r->params) - 1] = r->transport[sizeof(r->transport) - 1] = '\0';
		r->paper_ref[sizeof(r->paper_ref) - 1] = r->note[sizeof(r->note) - 1] = '\0';
		R->phase[R->nres++] = h->phase;
		return 0;
	}
	case GIC_PL_REC_VERDICT: {
		int32_t ok;

		if (h->len != sizeof(ok) || !phase_ok)
			break;
		memcpy(&ok, data, sizeof(ok));
		R->verdict[h->phase] = ok == 1;
		return 0;
	}
	case GIC_PL_REC_DONE:
		R->pe[rank].done = 1;
		return 0;
	case GIC_PL_REC_NOTE: {
		char text[GIC_PL_NOTE_MAX];

		if (h->len == 0 || h->len > sizeof(text))
			break;
		memcpy(text, data, h->len);
		text[h->len - 1] = '\0';
		fprintf(stderr, "gic %s: %s\n", s->sub, text);
		return 0;
	}
	}
	fprintf(stderr, "gic %s: %s PE %d sent a malformed record (type %u, %u bytes)\n", s->sub,
		s->lib, rank, h->type, h->len);
	return EPROTO;
}

/* Parses the complete records in PE rank's buffer; 0 or errno. */
static int pl_parse(pl_run *R, int rank)
{
	pl_proc *p = &R->pe[rank];
	size_t off = 0;
	int rc = 0;

	while (!rc && p->len - off >= sizeof(gic_pl_rec)) {
		gic_pl_rec h;

		memcpy(&h, p->buf + off, sizeof(h));
		if (h.magic != R->s->magic || h.len > GIC_PL_REC_MAX) {
			fprintf(stderr, "gic %s: %s PE %d: garbled output pipe\n", R->s->sub,
				R->s->lib, rank);
			return EPROTO;
		}
		if (p->len - off < sizeof(h) + h.len)
			break;
		rc = pl_record(R, rank, &h, p->buf + off + sizeof(h));
		off += sizeof(h) + h.len;
	}
	memmove(p->buf, p->buf + off, p->len - off);
	p->len -= off;
	return rc;
}

/* Reads what PE rank has written (poll said it is readable); 0 or errno. */
static int pl_read(pl_run *R, int rank)
{
	pl_proc *p = &R->pe[rank];
	ssize_t k;

	if (p->cap - p->len < 4096) {
		size_t cap = p->cap ? p->cap * 2 : 16384;
		uint8_t *b = realloc(p->buf, cap);

		if (!b)
			return ENOMEM;
		p->buf = b;
		p->cap = cap;
	}
	k = read(p->from_fd, p->buf + p->len, p->cap - p->len);
	if (k < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : errno;
	if (k == 0) {
		p->eof = 1;
		return 0;
	}
	p->len += (size_t)k;
	return pl_parse(R, rank);
}

/* Describes how PE p ended ("exited with status 255", "was killed by
 * signal 9 (Killed)") into buf. */
static void pl_how(const pl_proc *p, char *buf, size_t len)
{
	if (!p->reaped)
		snprintf(buf, len, "did not exit");
	else if (p->killed && WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL)
		snprintf(buf, len, "was stopped by the driver (SIGKILL)");
	else if (WIFEXITED(p->status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(p->status));
	else if (WIFSIGNALED(p->status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(p->status),
			 strsignal(WTERMSIG(p->status)));
	else
		snprintf(buf, len, "ended with wait status 0x%x", p->status);
}

/* Waits for every started PE, up to deadline (ms), then kills the rest and
 * waits for them (SIGKILL cannot be ignored). */
static void pl_reap(pl_run *R, uint64_t deadline)
{
	int n = R->s->npes;

	for (;;) {
		if (!pl_reap_exited(R))
			return;
		if (gic_pl_now_ms() >= deadline) {
			pl_kill_all(R);
			for (int i = 0; i < n; i++)
				if (R->pe[i].pid > 0 && !R->pe[i].reaped &&
				    waitpid(R->pe[i].pid, &R->pe[i].status, 0) == R->pe[i].pid)
					R->pe[i].reaped = 1;
			return;
		}
		usleep(10000);
	}
}

/* Reads every PE until each has closed its pipe; 0 or errno. A PE that
 * closes without DONE or SKIP ends the run (EIO). After a SKIP, with a
 * grace, the others get skip_grace_s to close theirs; then grace_over is
 * set and the loop ends without error (the caller stops them). */
static int pl_loop(pl_run *R, uint64_t deadline)
{
	const gic_pl_spec *s = R->s;
	uint64_t grace = 0;

	for (;;) {
		struct pollfd pf[GIC_PL_MAX_PES];
		int map[GIC_PL_MAX_PES], n = 0, rc = 0;
		uint64_t t = gic_pl_now_ms();

		for (int i = 0; i < s->npes; i++) {
			if (R->pe[i].pid <= 0 || R->pe[i].eof)
				continue;
			pf[n] = (struct pollfd){ .fd = R->pe[i].from_fd, .events = POLLIN };
			map[n++] = i;
		}
		if (!n)
			return 0;
		if (R->skipped && s->skip_grace_s > 0 && !grace)
			grace = t + (uint64_t)s->skip_grace_s * 1000;
		if (grace && t >= grace) {
			R->grace_over = 1;
			return 0;
		}
		if (t >= deadline)
			return ETIMEDOUT;
		if (poll(pf, (nfds_t)n, (int)(deadline - t < 200 ? deadline - t : 200)) < 0 &&
		    errno != EINTR)
			return errno;
		for (int k = 0; k < n && !rc; k++) {
			pl_proc *p = &R->pe[map[k]];

			if (!pf[k].revents)
				continue;
			rc = pl_read(R, map[k]);
			if (!rc && p->eof && !p->done && !p->skipped && !R->skipped)
				rc = EIO;
		}
		if (rc)
			return rc;
	}
}

/* 1 when PE p's program never started: the exec or the loader failed
 * (status 127: a missing program, or a library the PE program links,
 * absent or of another version; the loader's own message is above). */
static int pl_unstarted(const pl_proc *p)
{
	return p->pid > 0 && p->reaped && WIFEXITED(p->status) && WEXITSTATUS(p->status) == 127 &&
	       !p->done;
}

/* 1 when no PE's program started: the path is unavailable on this host,
 * which is said and skipped as a missing GPU is, not a failure. */
static int pl_none_started(const pl_run *R)
{
	int started = 0;

	for (int i = 0; i < R->s->npes; i++) {
		if (R->pe[i].pid <= 0)
			continue;
		if (!pl_unstarted(&R->pe[i]))
			return 0;
		started++;
	}
	return started > 0;
}

/* Reports how each started PE ended, closes our ends; rc, or EIO when a
 * PE failed and rc was 0 (0 when no PE's program could start: the path
 * is then skipped, with the reason). */
static int pl_report(pl_run *R, int rc)
{
	const gic_pl_spec *s = R->s;
	int unavailable = pl_none_started(R);

	for (int i = 0; i < s->npes; i++) {
		pl_proc *p = &R->pe[i];
		int clean = p->reaped && WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0;
		int stopped = p->reaped && p->killed && WIFSIGNALED(p->status) &&
			      WTERMSIG(p->status) == SIGKILL; /* by us, not gone already */
		char how[96];

		if (p->pid <= 0)
			continue;
		pl_how(p, how, sizeof(how));
		if (!rc && R->skipped && !clean && !p->skipped) {
			/* Waiting inside the library for the PE that skipped. */
			fprintf(stderr, "gic %s: %s PE %d %s after another PE skipped the run\n",
				s->sub, s->lib, i, how);
		} else if (!clean || (!p->done && !p->skipped)) {
			fprintf(stderr, "gic %s: %s PE %d %s%s%s\n", s->sub, s->lib, i, how,
				stopped ? ""
				: p->done ? " after it finished"
				: pl_unstarted(p) ? ": its program could not start (the path is "
						    "unavailable here; the reason, the exec's or the "
						    "loader's, is above)"
						  : " before it finished (its messages, if any, are "
						    "above)",
				unavailable && i == 0 ? ": skipped" : "");
			if (!rc && !unavailable)
				rc = EIO;
		}
		close(p->to_fd);
		close(p->from_fd);
	}
	return unavailable ? 0 : rc; /* the end of output it read was this, not a failure */
}

int gic_pl_emit_checked(const char *sub, gic_result *res, const int *phase, int n,
			const int *verdict, gic_sink *sink)
{
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		gic_result *r = &res[i];
		int v = verdict[phase[i]];

		r->validated = r->validated && v == 1;
		if (v != 1)
			fprintf(stderr, "gic %s: %s %s: %s\n", sub, r->name, r->metric,
				v < 0 ? "PE 1 sent no verdict" : "PE 1 found a wrong payload");
		rc = gic_emit(sink, r);
	}
	return rc;
}

/* Emits PE 0's results, each validated only with its phase's verdict. */
static int pl_finish(pl_run *R, gic_sink *sink)
{
	return gic_pl_emit_checked(R->s->sub, R->res, R->phase, R->nres, R->verdict, sink);
}

static void pl_free(pl_run *R)
{
	for (int i = 0; i < GIC_PL_MAX_PES; i++)
		free(R->pe[i].buf);
	free(R->res);
	free(R->phase);
	free(R->verdict);
	free(R->gather);
	free(R);
}

int gic_pl_run(const gic_pl_spec *s, gic_sink *sink, gic_pl_skip *skip)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	uint64_t deadline;
	pl_run *R;
	int rc;

	skip->skipped = 0;
	if (!s->sub || !s->lib || !s->subcommand || !s->limit_env || s->npes < 1 ||
	    s->npes > GIC_PL_MAX_PES || !s->job || s->job_len < sizeof(uint32_t) ||
	    s->job_len > GIC_PL_JOB_MAX ||
	    s->limit_s < 1 || s->max_results < 0 || s->nphases < 1 || s->skip_len < 1 ||
	    s->skip_len > GIC_PL_SKIP_MAX || s->skip_grace_s < 0)
		return EINVAL;
	R = calloc(1, sizeof(*R));
	if (!R)
		return ENOMEM;
	R->s = s;
	R->res = calloc((size_t)s->max_results + 1, sizeof(*R->res));
	R->phase = calloc((size_t)s->max_results + 1, sizeof(*R->phase));
	R->verdict = malloc((size_t)s->nphases * sizeof(*R->verdict));
	R->gather = malloc((size_t)s->npes * GIC_PL_GATHER_MAX);
	if (!R->res || !R->phase || !R->verdict || !R->gather) {
		pl_free(R);
		return ENOMEM;
	}
	for (int i = 0; i < s->nphases; i++)
		R->verdict[i] = -1;
	sigaction(SIGPIPE, &ign, &old); /* a PE that dies must not take us with it */
	/* The PEs' own limit (alarm) comes first and names the PE. */
	deadline = gic_pl_now_ms() + ((uint64_t)s->limit_s + GIC_PL_SLACK_S) * 1000;
	rc = 0;
	for (int r = 0; r < (s->start_all ? s->npes : 1) && !rc; r++) {
		rc = pl_spawn(R, r);
		if (!rc)
			rc = write_full(R->pe[r].to_fd, s->job, s->job_len);
		if (rc)
			fprintf(stderr, "gic %s: could not start %s PE %d: %s\n", s->sub, s->lib, r,
				strerror(rc));
	}
	if (!rc)
		rc = pl_loop(R, deadline);
	if (rc == ETIMEDOUT)
		fprintf(stderr, "gic %s: the %s PEs did not finish within %d s (%s): stopping them\n",
			s->sub, s->lib, s->limit_s + GIC_PL_SLACK_S, s->limit_env);
	if (rc || R->grace_over)
		pl_kill_all(R); /* after a skip: only those still there after the grace */
	pl_reap(R, gic_pl_now_ms() + GIC_PL_SLACK_S * 1000);
	rc = pl_report(R, rc);
	sigaction(SIGPIPE, &old, NULL);
	if (!rc && R->skipped) {
		skip->skipped = 1;
		memcpy(skip->data, R->skip, s->skip_len);
	} else if (!rc) {
		rc = pl_finish(R, sink);
	}
	pl_free(R);
	return rc;
}
