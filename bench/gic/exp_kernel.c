/*
 * bench/gic/exp_kernel.c - `gic kernel` (exp_kernel.h): parsing and the
 * host mode.
 *
 * Host mode (the FMA caller only): -c blocks (default 528; --quick 64) of
 * work spread over host threads (-t, default 2), each block an FMA loop
 * over --live values; variants none (no communication code), code (the
 * send compiled in behind a branch never taken), send (--msgs writes per
 * block on the thread's own QP, no wait) and sendwait (the same, then a
 * wait for their completion). Rounds of every block are timed; the loss
 * is 1 - t(none) / t(variant) on the medians, and "waiting loss" is
 * 1 - t(send) / t(sendwait). The FMA checksum of every variant must equal
 * none's, every slot a thread wrote must hold its last message there and
 * every other slot be untouched (each configuration starts with PE1's
 * slots cleared or poisoned). Registers, spills and resident blocks are
 * GPU-mode results.
 *
 * --procs 2 (pe_pair.h): the same bodies with PE1, the messages' target,
 * a process of its own, a phase per configuration: PE 1 clears its slots
 * and lets PE 0 go (gic_pair_begin), PE 0 runs and times the rounds and
 * signals their end (gic_pair_end; its threads' queues are quiet), hands
 * its message counts over (gic_pair_exchange), and PE 1 checks every slot
 * and sends its verdict; the checksum is PE 0's check. In GPU mode
 * (gpu_kernel.cu, gic_gpu_kernel_pe; softnic's GPU peers) the one-process
 * GPU mode's kernels and checks with PE 1, the messages' target, a
 * process of its own: the gda path, at most
 * GIC_KERNEL_GPU_PAIR_MAX_BLOCKS blocks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_kernel.h"
#include "gic.h"
#include "host.h"
#include "nvshmem_pe.h"
#include "pe_pair.h"

#define SUB "kernel"
enum { KMAX_THREADS = 8, KITERS = 256, KSLOTS = 64 };

static const char *const variant_names[] = { "none", "code", "send", "sendwait" };
static const char *const path_names[] = { "gda", "nvshmem" };

const char *gic_kernel_variant_name(unsigned variant_bit)
{
	for (int i = 0; i < 4; i++)
		if (variant_bit == 1u << i)
			return variant_names[i];
	return NULL;
}

const char *gic_kernel_caller_name(unsigned caller_bit)
{
	return caller_bit == GIC_KERNEL_FMA ? "fma" : caller_bit == GIC_KERNEL_STREAM ? "stream" :
									      NULL;
}

#define F(m) GIC_FLAG_FIELD(kernel_state, m)
static const gic_flag kernel_flags[] = {
	{ "--caller", .value = "C", GIC_FLAG_CHOICE, F(callers),
	  GIC_FLAG_NAMES("fma", "stream", "both"), GIC_FLAG_VALUES(1, 2, 3), .dflt = "fma",
	  .help = "the host runs fma only" },
	{ "--live", .value = "N", GIC_FLAG_INT, F(live), .lo = 1, .hi = GIC_KERNEL_MAX_LIVE,
	  .def = 8, .help = "live values per thread (GPU: 4, 8, 16, 32, 64, 160, 224)" },
	{ "--variant", .value = "V", GIC_FLAG_BITS, F(variants), .names = variant_names, .n = 4,
	  .all = GIC_KERNEL_VARIANT_ALL, .dflt = "all" },
	{ "--msgs", .value = "LIST", GIC_FLAG_LIST, F(msgs), .count_off = offsetof(kernel_state,
	  nmsgs), .lo = 0, .hi = 1024, .max = GIC_KERNEL_MAX_MSGS, .dflt = "0,1,4,16",
	  .help = "messages per block" },
	{ "--size", .value = "B", GIC_FLAG_CHOICE, F(size), GIC_FLAG_NAMES("8", "7168"),
	  GIC_FLAG_VALUES(8, 7168), .def = 8, .dflt = "8", .help = "bytes per message" },
	{ "--work-us", .value = "T", GIC_FLAG_INT, F(work_us), .lo = 0, .hi = 10000000,
	  .def = GIC_KERNEL_WORK_PAPER, .dflt = "the paper's times, fma 2100, stream 2600; "
	  "--quick: a fixed 256", .help = "GPU, gda path: size each caller's work so that "
	  "\"none\" takes T us (one probe of 4096 iterations, scaled); 0: a fixed 4096 "
	  "iterations; the rows' params give the iterations" },
	{ "-c N, -t N", .kind = GIC_FLAG_NOTE, .help = "blocks (default 528) and threads per "
	  "block (GPU default 256; host: threads, default 2)" },
	{ "--engine-sms N", .kind = GIC_FLAG_NOTE, .help = "(common flag) every variant, "
	  "none included, runs on the SMs the engine leaves, so the waiting loss is the "
	  "submitter's; the rows' params give the split; gda path only" },
	{ "--path", .value = "P", GIC_FLAG_BITS, F(paths), .names = path_names, .n = 2,
	  .fn = gic_flag_lib_path, .dflt = "gda",
	  .help = "\nnvshmem: the NVSHMEM path between two GPUs (PE r on CUDA device r, one "
	  "process each): the same fma caller on PE 0 with NVSHMEM's send path (code: "
	  "nvshmem_putmem_nbi behind a flag never true; send: thread 0 of each block puts each "
	  "message; sendwait: then nvshmem_quiet; --msgs default 16), payloads checked on PE 1; "
	  "rows named \"nvshmem ...\"; GPU mode only, fma only; " GIC_NVSHMEM_HELP_SKIPS },
};
#undef F
static const gic_flag_table kernel_table = GIC_FLAG_TABLE(SUB, kernel_flags, 0);

static int kernel_finish(void *state, unsigned marks)
{
	kernel_state *st = state;

	(void)marks;
	st->msgs_given = st->nmsgs > 0;
	if (!st->paths)
		st->paths = 1u << GIC_KERNEL_GDA;
	if ((st->paths & (1u << GIC_KERNEL_NVSHMEM)) && (st->callers & GIC_KERNEL_STREAM)) {
		fprintf(stderr, "gic kernel: --path nvshmem runs the fma caller (not --caller %s)\n",
			st->callers & GIC_KERNEL_FMA ? "both" : "stream");
		return EINVAL;
	}
	if (!st->callers)
		st->callers = GIC_KERNEL_FMA;
	if (!st->variants)
		st->variants = GIC_KERNEL_VARIANT_ALL;
	if (!st->nmsgs) {
		static const int dflt[] = { 0, 1, 4, 16 };

		memcpy(st->msgs, dflt, sizeof(dflt));
		st->nmsgs = 4;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Host mode. */

typedef struct k_host k_host;

typedef struct k_thread {
	pthread_t tid;
	k_host *K;
	int t;
	double sum;       /* FMA checksum of its blocks */
	uint64_t sent;    /* messages posted (--procs 2 PE 1: PE 0's count, exchanged) */
	int rc;
} k_thread;

struct k_host {
	const gic_opts *o;
	const kernel_state *st;
	gic_pair *pair;      /* --procs 2: this process's PE (NULL: both PEs here) */
	hx *h;
	int blocks, threads, variant, msgs;
	volatile int never;  /* 0: the "code" variant's branch is never taken */
	k_thread th[KMAX_THREADS];
};

/* Phases of --procs 2: a (variant, msgs) configuration each; at most
 * three rows each (time, loss, waiting loss); in GPU mode for each of two
 * callers, at most six rows each (registers, spill, blocks/SM too). */
enum { K_PAIR_PHASES = 2 + 2 * GIC_KERNEL_MAX_MSGS, K_PAIR_RESULTS = 3 * K_PAIR_PHASES,
       K_GPU_PAIR_PHASES = 2 * K_PAIR_PHASES, K_GPU_PAIR_RESULTS = 6 * K_GPU_PAIR_PHASES };

/* One block's compute: KITERS rounds of FMAs over live values. */
static double fma_block(int live, int block)
{
	double v[GIC_KERNEL_MAX_LIVE];
	double s = 0;

	for (int k = 0; k < live; k++)
		v[k] = 1.0 + (double)(block + k) * 1e-3;
	for (int it = 0; it < KITERS; it++)
		for (int k = 0; k < live; k++)
			v[k] = v[k] * 0.999999 + 1e-6;
	for (int k = 0; k < live; k++)
		s += v[k];
	return s;
}

/* Thread T's messages for one block on its own QP; waits when asked. */
static int k_send(k_host *K, k_thread *T, int wait)
{
	size_t sz = K->st->size;
	uint64_t end = 0;
	int rc = 0;

	for (int m = 0; m < K->msgs && !rc; m++, T->sent++) {
		size_t off = ((size_t)T->t * KSLOTS + T->sent % KSLOTS) * sz;
		uint64_t v = hx_value((uint64_t)T->t + 1, T->sent);
		int last = m + 1 == K->msgs;

		if (sz == 8)
			rc = hx_write(K->h, 0, T->t, off, &v, 0, 8, 0, last, 1, GIC_ORDER_RELEASE_SYS,
				      hx_deadline(), &end);
		else
			rc = hx_write(K->h, 0, T->t, off, NULL, off, sz, 1, last, 1,
				      GIC_ORDER_RELEASE_SYS, hx_deadline(), &end);
	}
	if (!rc && wait && K->msgs)
		rc = gic_sq_wait_retired(&K->h->pe[0].sq[T->t], end, 0, GIC_ORDER_RELEASE_SYS,
					 hx_deadline());
	return rc;
}

static void *k_thread_main(void *arg)
{
	k_thread *T = arg;
	k_host *K = T->K;

	T->sum = 0;
	for (int b = T->t; b < K->blocks && !T->rc; b += K->threads) {
		T->sum += fma_block(K->st->live, b);
		if (K->variant == 1 && K->never)
			T->rc = k_send(K, T, 1);
		else if (K->variant >= 2)
			T->rc = k_send(K, T, K->variant == 3);
	}
	if (!T->rc)
		T->rc = gic_sq_quiet(&K->h->pe[0].sq[T->t], GIC_ORDER_RELEASE_SYS, hx_deadline());
	return NULL;
}

/* One round of every block; *ns its time, *sum the checksum. */
static int k_round(k_host *K, uint64_t *ns, double *sum)
{
	uint64_t t0 = gic_now_ns();
	int rc = 0, started = 0;

	for (int t = 0; t < K->threads; t++) {
		K->th[t].K = K;
		K->th[t].t = t;
		K->th[t].rc = 0;
		if (pthread_create(&K->th[t].tid, NULL, k_thread_main, &K->th[t]))
			break;
		started++;
	}
	*sum = 0;
	for (int t = 0; t < started; t++) {
		pthread_join(K->th[t].tid, NULL);
		*sum += K->th[t].sum;
		if (!rc && K->th[t].rc)
			rc = hx_fail(K->h, 0, t, "kernel send", K->th[t].rc);
	}
	*ns = gic_now_ns() - t0;
	return rc ? rc : started < K->threads ? EAGAIN : 0;
}

/* The expected bytes of thread t's slot s (its last message there). */
static const uint8_t *k_expected(k_host *K, int t, uint64_t s, uint64_t *v)
{
	uint64_t last = s + (K->th[t].sent - 1 - s) / KSLOTS * KSLOTS;

	*v = hx_value((uint64_t)t + 1, last);
	if (K->st->size == 8)
		return (const uint8_t *)v;
	return K->h->pe[gic_pair_rank(K->pair)].src + ((size_t)t * KSLOTS + s) * K->st->size;
}

/* Where PE 1 receives, before a configuration: every slot cleared (an
 * 8-byte value is nonzero) or poisoned against its source pattern, so
 * that a message that never lands cannot pass. */
static void k_prepare(k_host *K)
{
	uint8_t *dst = K->h->pe[1].dst;
	size_t region = (size_t)KMAX_THREADS * KSLOTS * K->st->size;

	if (!gic_pair_checks(K->pair))
		return;
	if (K->st->size == 8)
		memset(dst, 0, region);
	else
		gic_poison(dst, K->h->pe[gic_pair_rank(K->pair)].src, region);
}

/* 1 when thread t's slot s (not written in this configuration) still
 * holds what k_prepare left there; else 0 after a message. */
static int k_untouched(k_host *K, int t, uint64_t s)
{
	size_t sz = K->st->size, off = ((size_t)t * KSLOTS + s) * sz;
	const uint8_t *got = K->h->pe[1].dst + off;
	const uint8_t *pat = K->h->pe[gic_pair_rank(K->pair)].src + off;

	for (size_t i = 0; i < sz; i++) {
		if (got[i] != (sz == 8 ? 0 : (uint8_t)~pat[i])) {
			fprintf(stderr, "gic kernel: thread %d's slot %llu was written (byte %zu: "
				"0x%02x) but no message of this configuration went there\n", t,
				(unsigned long long)s, i, got[i]);
			return 0;
		}
	}
	return 1;
}

/* 1 when every slot a thread wrote holds its last message there and
 * every other slot is as k_prepare left it (none and code: all). */
static int k_messages_ok(k_host *K)
{
	for (int t = 0; t < KMAX_THREADS; t++) {
		for (uint64_t s = 0; s < KSLOTS; s++) {
			size_t off = ((size_t)t * KSLOTS + s) * K->st->size;
			uint64_t v;

			if (t >= K->threads || s >= K->th[t].sent) {
				if (!k_untouched(K, t, s))
					return 0;
			} else if (!hx_check(SUB, "message slot", K->h->pe[1].dst + off,
					     k_expected(K, t, s, &v), K->st->size)) {
				return 0;
			}
		}
	}
	return 1;
}

/* --procs 2, after gic_pair_end: PE 0's message counts to PE 1, for its
 * check. Nothing with both PEs here. */
static int k_swap_sent(k_host *K)
{
	uint64_t mine[KMAX_THREADS] = { 0 }, theirs[KMAX_THREADS] = { 0 };
	int rc;

	if (!K->pair)
		return 0;
	for (int t = 0; t < K->threads && gic_pair_posts(K->pair); t++)
		mine[t] = K->th[t].sent;
	rc = gic_pair_exchange(K->pair, mine, theirs, sizeof(mine));
	for (int t = 0; t < K->threads && !rc && gic_pair_checks(K->pair); t++)
		K->th[t].sent = theirs[t];
	return rc;
}

/* Runs rounds of one (variant, msgs) (PE 0 of a pair; PE 1 waits); samples
 * in us; *valid: the checksum equals none's (where it ran) and every slot
 * written holds its message (where it landed). */
static int k_config(k_host *K, gic_samples *s, double ref_sum, double *sum, int *valid)
{
	int rounds = K->o->quick ? 5 : 20, rc;

	for (int t = 0; t < K->threads; t++)
		K->th[t].sent = 0;
	k_prepare(K);
	rc = gic_pair_begin(K->pair, K->h);
	for (int r = 0; r < rounds + 1 && !rc && gic_pair_posts(K->pair); r++) {
		uint64_t ns;

		rc = k_round(K, &ns, sum);
		if (!rc && r)  /* the first round warms up */
			gic_samples_add(s, (double)ns / 1e3);
	}
	if (!rc)
		rc = gic_pair_end(K->pair, K->h);
	if (!rc)
		rc = k_swap_sent(K);
	*valid = !rc && (ref_sum == 0 || *sum == ref_sum) &&
		 (!gic_pair_checks(K->pair) || k_messages_ok(K));
	if (!rc && ref_sum != 0 && *sum != ref_sum)
		fprintf(stderr, "gic kernel: checksum %.17g differs from none's %.17g\n", *sum,
			ref_sum);
	return rc;
}

static int k_emit(k_host *K, gic_sink *sink, const char *name, const char *metric,
		  const char *unit, const gic_samples *s, double value, int valid)
{
	gic_result r;

	gic_result_init(&r, SUB, name, metric, unit);
	if (s)
		gic_result_set_samples(&r, s, 0);
	else
		gic_result_set_value(&r, value);
	gic_result_param(&r, "caller=fma live=%d blocks=%d threads=%d size=%zu", K->st->live,
			 K->blocks, K->threads, K->st->size);
	if (K->pair)
		gic_result_param(&r, "procs=2");
	snprintf(r.transport, sizeof(r.transport), "%s", gic_transport(K->o));
	snprintf(r.note, sizeof(r.note), "host analogue (FMA on host threads); registers, "
		 "spills and blocks/SM are GPU-mode results");
	r.validated = valid;
	gic_result_paper(&r);
	return gic_pair_put(K->pair, sink, &r);
}

/* A configuration's rows (PE 0): time; loss against none (none_p50 > 0);
 * for sendwait, the waiting loss against send (send_p50 > 0). *p50 out. */
static int k_rows(k_host *K, gic_sink *sink, const char *name, const gic_samples *s,
		  double none_p50, double send_p50, int valid, double *p50)
{
	gic_summary sm;
	int rc = gic_summarize(s, 0, &sm);

	if (rc)
		return rc;
	*p50 = sm.p50;
	rc = k_emit(K, sink, name, "time", "us", s, 0, valid);
	if (!rc && none_p50 > 0)
		rc = k_emit(K, sink, name, "loss", "%", NULL, 100.0 * (1.0 - none_p50 / sm.p50),
			    valid);
	if (!rc && send_p50 > 0)
		rc = k_emit(K, sink, name, "waiting loss", "%", NULL,
			    100.0 * (1.0 - send_p50 / sm.p50), 1);
	return rc;
}

/* Runs variant v with msgs messages (a phase of --procs 2); emits its
 * rows (k_rows); *p50 and *sum out. */
static int k_variant(k_host *K, gic_sink *sink, int v, int msgs, double ref_sum,
		     double none_p50, double send_p50, double *p50, double *sum)
{
	gic_samples s = { 0 };
	char name[96];
	int valid = 0, rc;

	K->variant = v;
	K->msgs = msgs;
	snprintf(name, sizeof(name), "fma %s msgs=%d size=%zu", variant_names[v], msgs,
		 K->st->size);
	gic_progress(SUB, v + 1, 4, name);
	rc = k_config(K, &s, ref_sum, sum, &valid);
	if (!rc && gic_pair_posts(K->pair))
		rc = k_rows(K, sink, name, &s, none_p50, send_p50, valid, p50);
	if (!rc)
		gic_pair_phase_done(K->pair, valid);
	gic_samples_free(&s);
	return rc;
}

static int k_host_run(k_host *K, gic_sink *sink)
{
	double none = 0, send = 0, p50 = 0, ref = 0, sum = 0;
	unsigned vs = K->st->variants;
	int rc;

	rc = k_variant(K, sink, 0, 0, 0, 0, 0, &none, &ref);  /* the baseline always runs */
	if (!rc && (vs & GIC_KERNEL_CODE))
		rc = k_variant(K, sink, 1, 0, ref, none, 0, &p50, &sum);
	for (int m = 0; m < K->st->nmsgs && !rc; m++) {
		int msgs = K->st->msgs[m];

		send = 0;
		if (vs & GIC_KERNEL_SEND)
			rc = k_variant(K, sink, 2, msgs, ref, none, 0, &send, &sum);
		if (!rc && (vs & GIC_KERNEL_SENDWAIT))
			rc = k_variant(K, sink, 3, msgs, ref, none, send, &p50, &sum);
	}
	return rc;
}

/* The host mode's launch (-c, -t) and fixture from o and st. */
static void k_host_shape(k_host *K, hx_cfg *c, const gic_opts *o, const kernel_state *st)
{
	int maxm = 0;

	K->blocks = o->given & GIC_GIVEN_C ? o->ctas : (o->quick ? 64 : 528);
	K->threads = o->given & GIC_GIVEN_T ? o->threads : 2;
	if (K->threads > KMAX_THREADS)
		K->threads = KMAX_THREADS;
	for (int m = 0; m < st->nmsgs; m++)
		maxm = st->msgs[m] > maxm ? st->msgs[m] : maxm;
	*c = (hx_cfg){ .who = SUB, .provider = o->provider, .nic = o->nic,
		       .engine_threads = 1, .log_sq_bb = 10, .qps = K->threads,
		       .region = (size_t)KMAX_THREADS * KSLOTS * st->size };
	while ((1 << c->log_sq_bb) < 2 * maxm && c->log_sq_bb < 14)
		c->log_sq_bb++;
}

/* Host mode: in this process (pair NULL), or as this PE of a pair. The
 * source pattern is on this process's PE (PE 1: the copy it checks
 * 7168-byte messages against). */
static int kernel_host(const gic_opts *o, const kernel_state *st, gic_pair *pair,
		       gic_sink *sink)
{
	k_host K = { .o = o, .st = st, .pair = pair };
	hx_cfg c;
	int rc;

	k_host_shape(&K, &c, o, st);
	rc = gic_pair_open(pair, &K.h, &c);
	if (!rc) {
		for (size_t i = 0; i < c.region; i += 8)
			hx_fill(K.h->pe[gic_pair_rank(pair)].src + i, 8, i);
		rc = k_host_run(&K, sink);
	}
	hx_close(K.h);
	return rc;
}

_Static_assert(sizeof(kernel_state) <= GIC_PAIR_STATE_MAX, "kernel's state fits a pair job");

/* 1 when a pair job's state is one parse and kernel_check_procs let
 * through. */
static int k_pair_state_ok(const kernel_state *st)
{
	int ok = st->paths == 1u << GIC_KERNEL_GDA && st->live >= 1 &&
		 st->live <= GIC_KERNEL_MAX_LIVE && st->callers >= 1 && st->callers <= 3 &&
		 st->nmsgs >= 1 &&
		 st->nmsgs <= GIC_KERNEL_MAX_MSGS && (st->size == 8 || st->size == 7168);

	for (int m = 0; m < st->nmsgs && ok; m++)
		ok = st->msgs[m] >= 0 && st->msgs[m] <= 1024;
	return ok;
}

/* run_pe (exp.h): the host mode's configurations (or the GPU mode's) as
 * this PE of pair. */
static int kernel_run_pe(gic_pair *pair, const gic_opts *o, const void *state,
			 size_t state_len)
{
	const kernel_state *st = state;

	if (state_len != sizeof(*st) || !k_pair_state_ok(st)) {
		fprintf(stderr, "gic kernel: PE%d: a malformed job\n", gic_pair_rank(pair));
		return EPROTO;
	}
	return o->host ? kernel_host(o, st, pair, NULL) : gic_gpu_kernel_pe(pair, o, st);
}

int gic_kernel_live_ok(int live)
{
#define K_LIVE(n) n,
	static const int lives[] = { GIC_KERNEL_LIVE_CASES(K_LIVE) };
#undef K_LIVE

	for (size_t i = 0; i < sizeof(lives) / sizeof(lives[0]); i++)
		if (live == lives[i])
			return 1;
	return 0;
}

int gic_kernel_gpu_shape(const gic_opts *o, const kernel_state *st, int max_blocks,
			 kernel_gpu_shape *s)
{
	s->blocks = o->given & GIC_GIVEN_C ? o->ctas : 528; /* the paper's launch */
	s->threads = o->given & GIC_GIVEN_T ? o->threads : 256;
	s->max_msgs = 1;
	for (int k = 0; k < st->nmsgs; k++)
		s->max_msgs = st->msgs[k] > s->max_msgs ? st->msgs[k] : s->max_msgs;
	s->region = (size_t)s->blocks * (size_t)s->max_msgs * st->size;
	if (!gic_kernel_live_ok(st->live) || s->blocks > max_blocks ||
	    s->region > GIC_KERNEL_GPU_MAX_REGION) {
		fprintf(stderr, "gic kernel: --live must be 4, 8, 16, 32, 64, 160 or 224; at most %d "
			"blocks%s; blocks x messages x size at most 256 MiB\n", max_blocks,
			o->procs > 1 ? " with --procs 2 in GPU mode (a connected QP each)" : "");
		return EINVAL;
	}
	return 0;
}

/* --procs 2 (after main's checks: --host, a provider other than softnic;
 * or GPU mode on softnic): the gda path only; in GPU mode the launch
 * gic_kernel_gpu_shape takes for a pair. */
static int kernel_check_procs(const gic_opts *o, const void *state)
{
	const kernel_state *st = state;
	kernel_gpu_shape s;

	if (st->paths & ~(1u << GIC_KERNEL_GDA)) {
		fprintf(stderr, "gic kernel: --procs %d runs the gda path only (--path nvshmem "
			"runs its own PEs)\n", o->procs);
		return EINVAL;
	}
	if (!o->host && gic_kernel_gpu_shape(o, st, GIC_KERNEL_GPU_PAIR_MAX_BLOCKS, &s))
		return EINVAL;
	return 0;
}

/* The NVSHMEM path: the GPU mode's launch, live values and variants, in
 * PEs of their own (nvshmem_pe.h); --msgs, else 16 messages per block. */
static int kernel_nvshmem(const gic_opts *o, const kernel_state *st, gic_sink *sink)
{
	gic_nv_job job = { .kind = GIC_NV_KERNEL, .iters = 5, .k_live = st->live,
			   .k_variants = st->variants | GIC_KERNEL_NONE, .k_size = (uint32_t)st->size };
	int maxm = 0;

	job.k_blocks = o->given & GIC_GIVEN_C ? o->ctas : 528; /* the paper's launch */
	job.k_threads = o->given & GIC_GIVEN_T ? o->threads : 256;
	job.k_work = o->quick ? 256 : 4096;
	if (st->msgs_given) {
		job.k_nmsgs = st->nmsgs;
		memcpy(job.k_msgs, st->msgs, sizeof(int) * (size_t)st->nmsgs);
	} else {
		job.k_nmsgs = 1;
		job.k_msgs[0] = 16; /* Table 14: 16 individual messages per block */
	}
	for (int k = 0; k < job.k_nmsgs; k++)
		maxm = job.k_msgs[k] > maxm ? job.k_msgs[k] : maxm;
	if (!gic_kernel_live_ok(st->live)) {
		fprintf(stderr, "gic kernel: --path nvshmem: --live %d: expected 4, 8, 16, 32, 64, "
			"160 or 224\n", st->live);
		return EINVAL;
	}
	if ((double)job.k_blocks * (maxm ? maxm : 1) * (double)st->size > GIC_NV_KERNEL_REGION) {
		fprintf(stderr, "gic kernel: --path nvshmem: blocks x messages x size: %d x %d x %zu "
			"is above %d bytes\n", job.k_blocks, maxm, st->size, GIC_NV_KERNEL_REGION);
		return EINVAL;
	}
	return gic_nvshmem_run(SUB, &job, sink);
}

static int kernel_run(const gic_opts *o, void *state, const gic_run_info *info,
		      gic_sink *sink)
{
	kernel_state *st = state;
	int rc;

	if (o->engine_sms && (st->paths & (1u << GIC_KERNEL_NVSHMEM)))
		fprintf(stderr, "gic kernel: --engine-sms places softnic's GPU engine: the nvshmem "
			"path has none, its rows run on every SM of their GPUs\n");
	if (o->host && st->work_us != GIC_KERNEL_WORK_PAPER) {
		fprintf(stderr, "gic kernel: --work-us sizes the GPU callers' work (not with "
			"--host)\n");
		return EINVAL;
	}
	if (st->work_us && !o->quick && (st->paths & (1u << GIC_KERNEL_NVSHMEM)))
		fprintf(stderr, "gic kernel: the nvshmem path runs a fixed 4096 iterations "
			"(--work-us sizes the gda path's)\n");
	if (o->host && (st->paths & (1u << GIC_KERNEL_NVSHMEM))) {
		fprintf(stderr, "gic kernel: --path nvshmem runs on GPUs (not with --host)\n");
		return EINVAL;
	}
	if (o->procs > 1) /* host or GPU mode (check_procs took it) */
		return gic_pair_run(o, SUB, st, sizeof(*st), o->host ? K_PAIR_PHASES
								     : K_GPU_PAIR_PHASES,
				    o->host ? K_PAIR_RESULTS : K_GPU_PAIR_RESULTS, sink);
	if (o->host)
		return kernel_host(o, st, NULL, sink);
	/* Every path asked for: gda in this process, then nvshmem in its PEs;
	 * the first error is returned, what ran is kept. */
	rc = st->paths & (1u << GIC_KERNEL_GDA) ? gic_gpu_kernel(o, st, info, sink) : 0;
	if (st->paths & (1u << GIC_KERNEL_NVSHMEM)) {
		int nrc = kernel_nvshmem(o, st, sink);

		rc = rc ? rc : nrc;
	}
	return rc;
}

const gic_experiment gic_exp_kernel = {
	.name = "kernel",
	.summary = "enclosing-kernel cost: registers, spills, residency, throughput loss "
		   "(Figure 9, Table 14)",
	.flags = &kernel_table,
	.state_size = sizeof(kernel_state),
	.finish = kernel_finish,
	.run = kernel_run,
	.check_procs = kernel_check_procs,
	.run_pe = kernel_run_pe,
	.gpu_procs = 1,
};
