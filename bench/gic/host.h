/*
 * bench/gic/host.h - the host modes' fixture: two PEs on the NIC that
 * --provider names, made through gic/provider.h only (softnic: PE1 shares
 * PE0's softnic, CPU engine; mlx5: two contexts on one device, a ConnectX
 * or the emulated device), each with `qps` RC QPs connected pairwise
 * (PE0 QP i <-> PE1 QP i) through connection records, a registered source
 * and destination region per PE, and optionally a mini-proxy from one PE
 * to the other; with hx_cfg.dc also a DC pair each way (each PE a DCI and
 * a DCT: PE0's DCI reaches PE1's DCT, PE1's DCI PE0's). Helpers post
 * writes with gic/post.h through the QPs' host views, fill and check
 * payload patterns, and time with CLOCK_MONOTONIC (gic_now_ns).
 *
 * Errors: 0 or a positive errno, after a message on stderr naming the
 * experiment and what failed (with the provider's account).
 */
#ifndef GIC_BENCH_HOST_H
#define GIC_BENCH_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "exp.h"
#include "pattern.h" /* gic_poison: before a write, the complement of its pattern */
#include "gic/provider.h"
#include "gic/proxy.h"

enum {
	HX_MAX_QPS = 64,
	HX_WAIT_NS_S = 5,        /* every wait gives up after this many seconds */
};

#define HX_WAIT_NS (HX_WAIT_NS_S * 1000000000ull)

typedef struct hx_cfg {
	const char *who;     /* experiment name, for messages */
	int provider;        /* GIC_PROV_* (gic_opts.provider) */
	const char *nic;     /* mlx5: the RDMA device (NULL: the first) */
	int engine_threads;  /* softnic CPU engine threads (1..2) */
	int qps;             /* QPs per PE (1..HX_MAX_QPS) */
	int log_sq_bb;       /* ring of 2^n BBs per QP (6..14) */
	size_t region;       /* bytes of each PE's source and destination */
	int dc;              /* 1: also each PE's DCI and DCT (hx_pe.dci, .dct) */
} hx_cfg;

/* hx_fail's q for a PE's DCI. */
enum { HX_DCI = -1 };

typedef struct hx_pe {
	gic_nic *nic;
	gic_nic_cq *cq[HX_MAX_QPS];
	gic_nic_qp *qp[HX_MAX_QPS];
	gic_sq sq[HX_MAX_QPS];
	gic_cq cqv[HX_MAX_QPS];
	uint8_t *src, *dst;
	gic_nic_mr *src_mr, *dst_mr;
	uint32_t dst_rkey, src_lkey;
	/* hx_cfg.dc: this PE's DCI (a send CQ of its own) and DCT (on this
	 * PE, so the destination's rkey resolves at it; its receive CQ), and
	 * the address vectors naming the peer's DCT, filled once: [0]
	 * compact (16 bytes), [1] full (48); peer_av_rc[k] is 0, or why form
	 * k is not available (the compact one on a route with a GRH). */
	gic_nic_qp *dci, *dct;
	gic_nic_cq *dci_cq, *dct_cq;
	gic_sq dci_sq;
	gic_cq dci_cqv;
	gic_av_seg peer_av[2];
	int peer_av_rc[2];
	/* 1: this PE is another process's (hx_open_proc): only dst (its
	 * address there, never dereferenced here) and dst_rkey are set. */
	int remote;
} hx_pe;

/* Hands this PE's connection records (mine, len bytes: one gic_conn wire
 * record per QP, QP 0 first) to the peer's process and receives the
 * peer's (theirs, len bytes); 0 or an errno after a message. */
typedef int (*hx_swap_fn)(void *arg, const uint8_t *mine, uint8_t *theirs, size_t len);

typedef struct hx {
	hx_cfg c;
	hx_pe pe[2];
	/* hx_open_proc: how records reach the peer's process (hxp_open's
	 * across processes); NULL with both PEs here. */
	hx_swap_fn swap;
	void *swap_arg;
} hx;

/* Opens one PE on provider `which` (GIC_PROV_*): softnic with
 * engine_threads CPU engine threads, or sharing share's softnic; mlx5 on
 * device name (NULL: the first), a context of its own. NULL after a
 * message naming who and the provider's reason (a build without the mlx5
 * provider says so). */
gic_nic *hx_nic_open(const char *who, int which, const char *name, gic_nic *share,
		     int engine_threads);

/* Opens a PE on o's provider and NIC, writes its gic_nic_describe() line
 * into out, names the mlx5 transport of the rows (gic_set_mlx5_transport:
 * "mlx5-emulated" on the emulated device) and closes it: the driver's
 * record of what the host modes run on. 0, or the errno after
 * hx_nic_open's message. */
int hx_nic_describe(const gic_opts *o, char *out, size_t len);

/* Opens the fixture (*out NULL on failure). */
int hx_open(hx **out, const hx_cfg *c);
/* Frees a fixture of hx_open or hx_open_proc (NULL: nothing). */
void hx_close(hx *h);

/* Opens PE rank (0 or 1) of a pair whose other PE is another process: this
 * PE's NIC, QPs and regions as hx_open makes them; QP i's record (with the
 * destination's addr and rkey) swapped through swap for the peer's QP i,
 * each QP connected and viewed. pe[1 - rank] then holds only the peer's
 * destination (dst, dst_rkey) and remote = 1: hx_write posts to it; no DC
 * (c->dc must be 0). A mini-proxy (hxp_open) reaches the peer's process
 * through swap too. *out NULL on failure, after a message naming who,
 * the PE and the provider's account. */
int hx_open_proc(hx **out, const hx_cfg *c, int rank, hx_swap_fn swap, void *arg);

/* A deadline HX_WAIT_NS from now. */
uint64_t hx_deadline(void);

/* The 8-byte value of message i of stream s: distinct and nonzero (of
 * gic_mix64). */
uint64_t hx_value(uint64_t s, uint64_t i);
/* Fills len bytes with the pattern of seed. */
void hx_fill(uint8_t *buf, size_t len, uint64_t seed);
/* 1 when got[0..len) equals want; else 0 after a message. */
int hx_check(const char *who, const char *what, const uint8_t *got, const uint8_t *want,
	     size_t len);

/* Posts one RDMA write from PE `pe` on its QP q to the peer's destination
 * at dst_off: inline (data) or pointer (from the PE's source at src_off),
 * signaled or not, and rings (publish) unless ring is 0. Exclusive use of
 * the queue. *end (may be NULL) receives the WQE's end position. */
int hx_write(hx *h, int pe, int q, size_t dst_off, const void *data, size_t src_off,
	     size_t len, int pointer, int signaled, int ring, int order, uint64_t deadline,
	     uint64_t *end);

/* The DC form of hx_write (hx_cfg.dc): an 8-byte inline write of value
 * from PE pe's DCI to the peer's destination at dst_off through the peer's
 * DCT, its AV compact (full 0: one BB) or full (full 1: two BBs). */
int hx_write_dc(hx *h, int pe, size_t dst_off, uint64_t value, int full, int signaled,
		int ring, int order, uint64_t deadline, uint64_t *end);

/* Prints why a post or wait on PE pe, QP q (HX_DCI: its DCI) failed (rc)
 * and returns rc. */
int hx_fail(hx *h, int pe, int q, const char *what, int rc);

/* Waits (bounded) until *word == want; 0 or ETIMEDOUT. Yields the CPU
 * now and then so that an oversubscribed machine progresses. */
int hx_wait_u64(const uint64_t *word, uint64_t want, uint64_t deadline);

/* Waits (bounded, as hx_wait_u64) until *word != old, the value then in
 * *now; 0 or ETIMEDOUT. For a word the NIC writes (a peer process's). */
int hx_wait_u64_change(const uint64_t *word, uint64_t old, uint64_t deadline, uint64_t *now);

enum { HX_SWAP_CHUNK = 64 }; /* records per call of an hx_swap_fn (4 KiB) */

/* Swaps n connection records (local: this PE's, addr and rkey included)
 * with the peer's process through swap (arg), HX_SWAP_CHUNK records a
 * call: remote[0..n) receives the peer's. Both PEs call it with the same
 * n. 0, EINVAL (n < 1), or an errno after a message naming who, this PE
 * (rank) and the record. */
int hx_swap_records(hx_swap_fn swap, void *arg, const char *who, int rank,
		    const gic_conn_info *local, gic_conn_info *remote, int n);

/* ------------------------------------------------------------------ */
/* A mini-proxy from PE `from` to the other PE. With both PEs here, one
 * proxy whose workers' QPs connect to peer QPs on the other PE's NIC.
 * With the other PE in another process (hx_open_proc), both processes
 * call hxp_open with the same hxp_cfg: the producers' process (PE from)
 * makes the proxy (gic_proxy_attr.target_remote) and the target's makes
 * a QP per worker on its NIC (peer_qp); the records are swapped through
 * h->swap and each end connected. */

typedef struct hxp {
	gic_proxy *p;             /* the producers' process; NULL in the target's */
	gic_proxy_ring views[GIC_PROXY_MAX_RINGS];
	uint64_t *counters;       /* 64 words */
	gic_nic_mr *ctr_mr;
	int rings;
	int npeers;               /* the target's process: its QPs, one per worker */
	gic_nic_qp *peer_qp[GIC_PROXY_MAX_WORKERS];
	gic_nic_cq *peer_cq[GIC_PROXY_MAX_WORKERS];
} hxp;

typedef struct hxp_cfg {
	int from;                 /* producers' PE */
	int workers, rings, batch;
	int protocol;             /* GIC_PROXY_BASELINE or GIC_PROXY_TUNED */
	int counter_gpu;          /* GIC_PROXY_COUNTER_GPU when 1 */
	int warm_ms;
	int idle_ms;              /* workers idle this long before the warm-up (cold) */
	int inflight;             /* K chains per worker; 0: the proxy's default */
	int log_slots;            /* 0: 256 slots */
} hxp_cfg;

/* Creates and starts the proxy (workers unpinned, idle_sleep_ns set so
 * that shared cores progress); in the target's process of a pair (PE
 * from remote), its end of each worker's QP instead (above). 0, or errno
 * after a message. */
int hxp_open(hxp *x, hx *h, const hxp_cfg *c);
/* Stops and frees what hxp_open made (a zeroed hxp: nothing). */
void hxp_close(hxp *x);

/* Enqueues an 8-byte inline write of value to the peer's destination at
 * dst_off on ring r, counted on counter c. */
int hxp_put_u64(hxp *x, int r, size_t dst_off, uint64_t value, uint32_t c, uint64_t deadline);

/* Prints the proxy's error with what and returns rc. */
int hxp_fail(hxp *x, const char *who, const char *what, int rc);

#endif /* GIC_BENCH_HOST_H */
