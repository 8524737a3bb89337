/*
 * bench/gic/nvshmem_launch.c - the driver side of the NVSHMEM path
 * (nvshmem_pe.h): starts the PEs as fresh processes of this program,
 * relays NVSHMEM's unique id, collects PE 0's results and PE 1's verdicts
 * within a time limit, and reports a PE that fails by its exit status.
 * Compiled into every `gic`; without NVSHMEM it only says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exp_lat.h"
#include "exp_loaded.h"
#include "exp_payload.h"
#include "exp_rate.h"
#include "gic.h"
#include "nvshmem_pe.h"

int gic_nvshmem_built(void)
{
#ifdef GIC_HAVE_NVSHMEM
	return 1;
#else
	return 0;
#endif
}

int gic_nvshmem_not_built(const char *sub, const char *flag, const char *val)
{
	fprintf(stderr, "gic %s: %s %s: not built (NVSHMEM not found at configure time; "
		"scripts/install-deps.sh installs it)\n", sub, flag, val);
	return EINVAL;
}

int gic_nvshmem_only(const gic_experiment *e, const void *state)
{
	if (e == &gic_exp_lat) {
		const lat_state *st = state;

		return st->paths == GIC_LAT_NVSHMEM && !st->sweep;
	}
	if (e == &gic_exp_rate) {
		const rate_state *st = state;
		int n = 0;

		for (int i = 0; i < st->nrows; i++)
			n += st->rows[i].mode == GIC_RATE_NVSHMEM;
		return st->nrows > 0 && n == st->nrows;
	}
	if (e == &gic_exp_loaded)
		return ((const loaded_state *)state)->paths == 1u << GIC_LOADED_NVSHMEM;
	if (e == &gic_exp_payload)
		return ((const payload_state *)state)->paths == 1u << GIC_PAYLOAD_NVSHMEM;
	return 0;
}

const char *gic_nv_qp_quiet_unavailable(void)
{
	static char why[GIC_NV_NOTE_MAX];
	const char *remote = getenv("NVSHMEM_REMOTE_TRANSPORT");
	static const char *const no_qps[] = { "none", "ucx", "libfabric" };

	if (!remote || !*remote)
		remote = "ibrc"; /* NVSHMEM's own default when nobody sets it */
	for (size_t i = 0; i < sizeof(no_qps) / sizeof(no_qps[0]); i++) {
		if (strcasecmp(remote, no_qps[i]))
			continue;
		snprintf(why, sizeof(why), "per-QP completion (nvshmemx_qp_quiet) needs a NIC "
			 "transport with QPs of its own (IBGDA; IBRC, IBDEVX, GPUNetIO); "
			 "NVSHMEM_REMOTE_TRANSPORT=%s %s", remote,
			 i ? "creates none" : "runs this pair over P2P only");
		return why;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Record I/O. */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

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

int gic_nv_write_rec(int fd, uint32_t type, int32_t phase, const void *data, uint32_t len)
{
	gic_nv_rec h = { GIC_NV_MAGIC, type, phase, len };
	int rc = write_full(fd, &h, sizeof(h));

	return rc || !len ? rc : write_full(fd, data, len);
}

int gic_nv_read_full(int fd, void *buf, size_t len, int limit_ms)
{
	uint8_t *p = buf;
	uint64_t deadline = now_ms() + (uint64_t)limit_ms;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ms();
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
/* The hidden subcommand. */

int gic_nvshmem_pe_main(int argc, char **argv)
{
	long v[4];

	if (argc != 6) {
		fprintf(stderr, "gic %s: internal subcommand of the NVSHMEM path (started by "
			"gic lat/rate/loaded/payload); expected <rank> <nranks> <in_fd> <out_fd>\n",
			GIC_NV_PE_SUBCOMMAND);
		return 2;
	}
	for (int i = 0; i < 4; i++) {
		char *end;

		errno = 0;
		v[i] = strtol(argv[2 + i], &end, 10);
		if (end == argv[2 + i] || *end || errno || v[i] < 0 || v[i] > 4096) {
			fprintf(stderr, "gic %s: expected an integer, got '%s'\n",
				GIC_NV_PE_SUBCOMMAND, argv[2 + i]);
			return 2;
		}
	}
	if (v[0] >= v[1]) {
		fprintf(stderr, "gic %s: rank %ld out of %ld PEs\n", GIC_NV_PE_SUBCOMMAND, v[0],
			v[1]);
		return 2;
	}
#ifdef GIC_HAVE_NVSHMEM
	signal(SIGPIPE, SIG_IGN);
	return gic_nvshmem_pe((int)v[0], (int)v[1], (int)v[2], (int)v[3]);
#else
	fprintf(stderr, "gic %s: the NVSHMEM path is not built into this binary\n",
		GIC_NV_PE_SUBCOMMAND);
	return 2;
#endif
}

/* ------------------------------------------------------------------ */
/* Driver. */

enum { NV_PHASES = GIC_NV_MAX_RESULTS + GIC_NV_MAX_ROWS };

typedef struct nv_pe {
	pid_t pid;           /* 0: not started */
	int to_fd, from_fd;  /* our ends: job and UID to the PE; records from it */
	uint8_t *buf;        /* bytes read and not yet parsed */
	size_t len, cap;
	int eof, done, reaped, status;
	int killed;          /* we sent SIGKILL */
} nv_pe;

typedef struct nv_run {
	const char *sub;
	const gic_nv_job *job;
	nv_pe pe[GIC_NV_PES];
	int skipped, found;  /* SKIP received; GPUs the PE found */
	gic_result res[GIC_NV_MAX_RESULTS];
	int phase[GIC_NV_MAX_RESULTS]; /* the phase of each result */
	int nres;
	int verdict[NV_PHASES];        /* PE 1's, by phase: -1 none, 0 bad, 1 good */
} nv_run;

/* Sets var for the PEs unless the user set it (the driver itself never
 * reads these). */
static void pe_env_default(const char *var, const char *val)
{
	setenv(var, val, 0);
}

/* Starts PE rank: a fresh process of this program, its stdout on our
 * stderr (our stdout carries the table). */
static int nv_spawn(nv_run *R, int rank)
{
	nv_pe *p = &R->pe[rank];
	int to[2], from[2];
	char a[4][16];
	char *argv[7];

	if (pipe2(to, O_CLOEXEC))
		return errno;
	if (pipe2(from, O_CLOEXEC)) {
		close(to[0]);
		close(to[1]);
		return errno;
	}
	snprintf(a[0], sizeof(a[0]), "%d", rank);
	snprintf(a[1], sizeof(a[1]), "%d", GIC_NV_PES);
	snprintf(a[2], sizeof(a[2]), "%d", to[0]);
	snprintf(a[3], sizeof(a[3]), "%d", from[1]);
	argv[0] = "gic";
	argv[1] = GIC_NV_PE_SUBCOMMAND;
	for (int i = 0; i < 4; i++)
		argv[2 + i] = a[i];
	argv[6] = NULL;
	fflush(NULL);
	p->pid = fork();
	if (p->pid == 0) {
		/* Only async-signal-safe calls between fork and exec. */
		if (fcntl(to[0], F_SETFD, 0) || fcntl(from[1], F_SETFD, 0) || dup2(2, 1) < 0)
			_exit(127);
		execv("/proc/self/exe", argv);
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

static void nv_kill_all(nv_run *R)
{
	for (int i = 0; i < GIC_NV_PES; i++) {
		nv_pe *p = &R->pe[i];

		if (p->pid <= 0 || p->reaped)
			continue;
		if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
			p->reaped = 1;
		else
			p->killed = !kill(p->pid, SIGKILL);
	}
}

/* Handles one record from PE rank; 0 or errno. */
static int nv_record(nv_run *R, int rank, const gic_nv_rec *h, const uint8_t *data)
{
	switch (h->type) {
	case GIC_NV_REC_SKIP:
		if (h->len != sizeof(int32_t))
			break;
		memcpy(&R->found, data, sizeof(int32_t));
		R->skipped = 1;
		return 0;
	case GIC_NV_REC_UID: {
		int rc = 0;

		if (rank != 0)
			break;
		for (int r = 1; r < GIC_NV_PES && !rc; r++) {
			rc = nv_spawn(R, r);
			if (!rc)
				rc = write_full(R->pe[r].to_fd, R->job, sizeof(*R->job));
			if (!rc)
				rc = gic_nv_write_rec(R->pe[r].to_fd, GIC_NV_REC_UID, 0, data, h->len);
			if (rc)
				fprintf(stderr, "gic %s: could not start NVSHMEM PE %d: %s\n", R->sub,
					r, strerror(rc));
		}
		return rc;
	}
	case GIC_NV_REC_RESULT: {
		gic_result *r = &R->res[R->nres];

		if (rank != 0 || h->len != sizeof(gic_result) || R->nres >= GIC_NV_MAX_RESULTS ||
		    h->phase < 0 || h->phase >= NV_PHASES)
			break;
		memcpy(r, data, sizeof(*r));
		r->experiment[sizeof(r->experiment) - 1] = r->name[sizeof(r->name) - 1] = '\0';
		r->metric[sizeof(r->metric) - 1] = r->unit[sizeof(r->unit) - 1] = '\0';
		r->params[sizeof(r->params) - 1] = r->transport[sizeof(r->transport) - 1] = '\0';
		r->paper_ref[sizeof(r->paper_ref) - 1] = r->note[sizeof(r->note) - 1] = '\0';
		R->phase[R->nres++] = h->phase;
		return 0;
	}
	case GIC_NV_REC_VERDICT: {
		int32_t ok;

		if (h->len != sizeof(ok) || h->phase < 0 || h->phase >= NV_PHASES)
			break;
		memcpy(&ok, data, sizeof(ok));
		R->verdict[h->phase] = ok == 1;
		return 0;
	}
	case GIC_NV_REC_DONE:
		R->pe[rank].done = 1;
		return 0;
	case GIC_NV_REC_ROWSKIP: {
		char text[GIC_NV_NOTE_MAX];

		if (rank != 0 || h->len == 0 || h->len > sizeof(text))
			break;
		memcpy(text, data, h->len);
		text[h->len - 1] = '\0';
		fprintf(stderr, "gic %s: %s\n", R->sub, text);
		return 0;
	}
	}
	fprintf(stderr, "gic %s: NVSHMEM PE %d sent a malformed record (type %u, %u bytes)\n",
		R->sub, rank, h->type, h->len);
	return EPROTO;
}

/* Parses the complete records in PE rank's buffer; 0 or errno. */
static int nv_parse(nv_run *R, int rank)
{
	nv_pe *p = &R->pe[rank];
	size_t off = 0;
	int rc = 0;

	while (!rc && p->len - off >= sizeof(gic_nv_rec)) {
		gic_nv_rec h;

		memcpy(&h, p->buf + off, sizeof(h));
		if (h.magic != GIC_NV_MAGIC || h.len > sizeof(gic_result) + 256) {
			fprintf(stderr, "gic %s: NVSHMEM PE %d: garbled output pipe\n", R->sub,
				rank);
			return EPROTO;
		}
		if (p->len - off < sizeof(h) + h.len)
			break;
		rc = nv_record(R, rank, &h, p->buf + off + sizeof(h));
		off += sizeof(h) + h.len;
	}
	memmove(p->buf, p->buf + off, p->len - off);
	p->len -= off;
	return rc;
}

/* Reads what PE rank has written; 0 or errno. */
static int nv_read(nv_run *R, int rank)
{
	nv_pe *p = &R->pe[rank];
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
	return nv_parse(R, rank);
}

/* Describes how PE rank ended ("exited with status 255", "killed by signal
 * 9 (Killed)") into buf. */
static void nv_how(const nv_pe *p, char *buf, size_t len)
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

/* Waits for every started PE, up to deadline (ms), then kills the rest. */
static void nv_reap(nv_run *R, uint64_t deadline)
{
	for (;;) {
		int left = 0;

		for (int i = 0; i < GIC_NV_PES; i++) {
			nv_pe *p = &R->pe[i];

			if (p->pid <= 0 || p->reaped)
				continue;
			if (waitpid(p->pid, &p->status, WNOHANG) == p->pid)
				p->reaped = 1;
			else
				left++;
		}
		if (!left)
			return;
		if (now_ms() >= deadline) {
			nv_kill_all(R);
			for (int i = 0; i < GIC_NV_PES; i++)
				if (R->pe[i].pid > 0 && !R->pe[i].reaped &&
				    waitpid(R->pe[i].pid, &R->pe[i].status, 0) == R->pe[i].pid)
					R->pe[i].reaped = 1;
			return;
		}
		usleep(10000);
	}
}

/* The loop: reads every PE until each has closed its pipe; 0 or errno.
 * A PE that closes without DONE (it died, or NVSHMEM exited it) ends the
 * run: the others are killed, since they would wait for it forever. */
static int nv_loop(nv_run *R, uint64_t deadline)
{
	for (;;) {
		struct pollfd pf[GIC_NV_PES];
		int map[GIC_NV_PES], n = 0, rc = 0;
		uint64_t t = now_ms();

		for (int i = 0; i < GIC_NV_PES; i++) {
			if (R->pe[i].pid <= 0 || R->pe[i].eof)
				continue;
			pf[n] = (struct pollfd){ .fd = R->pe[i].from_fd, .events = POLLIN };
			map[n++] = i;
		}
		if (!n)
			return 0;
		if (t >= deadline)
			return ETIMEDOUT;
		if (poll(pf, (nfds_t)n, (int)(deadline - t < 200 ? deadline - t : 200)) < 0 &&
		    errno != EINTR)
			return errno;
		for (int k = 0; k < n && !rc; k++) {
			nv_pe *p = &R->pe[map[k]];

			if (!pf[k].revents)
				continue;
			rc = nv_read(R, map[k]);
			if (!rc && p->eof && !p->done && !R->skipped)
				rc = EIO;
		}
		if (rc)
			return rc;
	}
}

/* Emits PE 0's results with PE 1's verdicts. */
static int nv_finish(nv_run *R, gic_sink *sink)
{
	int rc = 0;

	for (int i = 0; i < R->nres && !rc; i++) {
		gic_result *r = &R->res[i];

		r->validated = r->validated && R->verdict[R->phase[i]] == 1;
		if (R->verdict[R->phase[i]] != 1)
			fprintf(stderr, "gic %s: %s %s: %s\n", R->sub, r->name, r->metric,
				R->verdict[R->phase[i]] < 0 ? "PE 1 sent no verdict"
							    : "PE 1 found a wrong payload");
		rc = gic_emit(sink, r);
	}
	return rc;
}

static int limit_s(void)
{
	const char *e = getenv("GIC_NVSHMEM_LIMIT_S");
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v < 86400 ? (int)v : GIC_NV_LIMIT_S;
}

int gic_nvshmem_run(const char *sub, const gic_nv_job *in, gic_sink *sink)
{
	nv_run *R;
	gic_nv_job job = *in;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	uint64_t deadline;
	int rc;

	if (!gic_nvshmem_built())
		return gic_nvshmem_not_built(sub, "--path", "nvshmem"), ENOTSUP;
	R = calloc(1, sizeof(*R));
	if (!R)
		return ENOMEM;
	job.magic = GIC_NV_MAGIC;
	job.limit_s = limit_s();
	R->sub = sub;
	R->job = &job;
	for (int i = 0; i < NV_PHASES; i++)
		R->verdict[i] = -1;
	pe_env_default("NVSHMEM_REMOTE_TRANSPORT", "none");
	pe_env_default("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo");
	pe_env_default("NVSHMEM_DISABLE_NCCL", "1");
	/* The per-QP completion row: said and left out here when no NIC
	 * transport is configured (no GPU needed to know); else the PE reads
	 * the transport back and decides. */
	job.qp_quiet = 0;
	if (job.kind == GIC_NV_LAT && (job.metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC))) {
		const char *why = gic_nv_qp_quiet_unavailable();

		if (why)
			fprintf(stderr, "gic %s: nvshmem qp-quiet: skipped: %s\n", sub, why);
		job.qp_quiet = !why;
	}
	sigaction(SIGPIPE, &ign, &old); /* a PE that dies must not take us with it */
	/* The PEs' own limit (alarm) comes first and names the PE. */
	deadline = now_ms() + (uint64_t)job.limit_s * 1000 + 10000;
	rc = nv_spawn(R, 0);
	if (!rc)
		rc = write_full(R->pe[0].to_fd, &job, sizeof(job));
	if (!rc)
		rc = nv_loop(R, deadline);
	if (rc == ETIMEDOUT)
		fprintf(stderr, "gic %s: the NVSHMEM PEs did not finish within %d s "
			"(GIC_NVSHMEM_LIMIT_S): stopping them\n", sub, job.limit_s + 10);
	if (rc)
		nv_kill_all(R);
	nv_reap(R, now_ms() + 10000);
	for (int i = 0; i < GIC_NV_PES; i++) {
		nv_pe *p = &R->pe[i];
		char how[96];

		if (p->pid <= 0)
			continue;
		nv_how(p, how, sizeof(how));
		if (!(p->reaped && WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) ||
		    (!p->done && !R->skipped)) {
			fprintf(stderr, "gic %s: NVSHMEM PE %d %s%s\n", sub, i, how,
				p->killed ? ""
				: p->done ? " after it finished"
					  : " before it finished (its messages, if any, are above)");
			if (!rc)
				rc = EIO;
		}
		close(p->to_fd);
		close(p->from_fd);
		free(p->buf);
	}
	sigaction(SIGPIPE, &old, NULL);
	if (!rc && R->skipped)
		fprintf(stderr, "gic %s: the NVSHMEM path needs %d GPUs (found %d): skipped\n", sub,
			GIC_NV_PES, R->found);
	else if (!rc)
		rc = nv_finish(R, sink);
	free(R);
	return rc;
}
