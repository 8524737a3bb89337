/*
 * gic-emu-xproc (tests/emu/xproc_verbs.c, xproc_cases.c): a payload-checking
 * verbs client for two processes over the libibverbs API only. What the two
 * files share: one side's objects, its view of the peer, the checks it
 * counts, and the helpers the cases use.
 */
#ifndef GIC_XPROC_H
#define GIC_XPROC_H

#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	XP_AREA = 8 << 20,   /* each of the buffer's five areas */
	XP_ATOM = 4096,      /* the atomic targets' page */
	XP_INLINE = 256,     /* the inline size asked for */
	XP_SEND_WR = 256,
	XP_RECV_WR = 64,
	XP_SGE = 4,
	XP_CQE = 1024,
	XP_BATCH = 8,        /* WRs per ibv_post_send chain */
	XP_CANARY = 0xa5,
};

/* The areas of one side's registered buffer, by offset. */
enum {
	XP_SRC = 0,                /* what this side writes and sends from */
	XP_DST = 1 * XP_AREA,      /* where the peer writes */
	XP_RBUF = 2 * XP_AREA,     /* where receives scatter */
	XP_RSRC = 3 * XP_AREA,     /* what the peer reads */
	XP_RDST = 4 * XP_AREA,     /* where this side's reads land */
	XP_ATOMS = 5 * XP_AREA,    /* 8-byte counters the peer's atomics hit */
	XP_RESULTS = 5 * XP_AREA + XP_ATOM / 2, /* this side's atomics' results */
	XP_LEN = 5 * XP_AREA + XP_ATOM,
};

/* What the TCP exchange carries about one side (network order there). */
typedef struct xp_info {
	uint32_t lid, qpn, srq_qpn, psn, rkey;
	uint64_t addr;
	uint8_t gid[16];
} xp_info;

/* One side: its objects, the peer's info, and its counted checks. */
typedef struct xside {
	const char *name; /* "server" or "client" */
	int id;           /* 0 server, 1 client: seeds the patterns */
	int fd;           /* the TCP connection to the peer */
	double limit_s;   /* each wait's limit */
	int iters;
	const char *dev;
	pid_t child;      /* the peer's pid where this side started it */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp, *sqp; /* its own receive queue; the SRQ */
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t max_inline;
	int roce, gid_index;
	xp_info me, peer;
	unsigned checks, failed;
	int iter;          /* the iteration running, for messages */
	const char *phase; /* the phase running, for messages */
} xside;

/* What a completion must hold; byte_len UINT32_MAX is not checked. */
typedef struct xp_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num;
	int with_imm; /* 1: IBV_WC_WITH_IMM and imm; 0: no flag; -1: not checked */
	uint32_t imm; /* host order */
} xp_wc;

/* Counts a check on s; prints what failed, where. Returns ok. */
int xp_check(xside *s, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints a fatal problem of s (what, where) to stderr. */
void xp_fail(xside *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double xp_now(void);
/* A 4-byte tag to the peer, or one from it within limit_s. 0, or -1 with
 * errno (ETIMEDOUT; ECONNRESET: the peer closed the connection). */
int xp_tag_out(xside *s, uint32_t tag);
int xp_tag_in(xside *s, uint32_t *tag, double limit_s);
/* The peer and this side step together: a tag each way within the limit.
 * 0 or -1 (printed). */
int xp_sync(xside *s, uint32_t tag);
/* One completion from cq within the limit; 0 or -1 (printed, with what). */
int xp_wait_wc(xside *s, struct ibv_cq *cq, struct ibv_wc *wc, const char *what);
/* Waits for one completion and checks it against e. 0, or -1 when none came. */
int xp_expect(xside *s, struct ibv_cq *cq, const xp_wc *e, const char *what);
/* Posts a chain of n WRs (linked here) on qp; 0 or -1 (printed). */
int xp_post_chain(xside *s, struct ibv_qp *qp, struct ibv_send_wr *wr, int n, const char *what);

/* The checked rounds, both directions at once (xproc_cases.c). 0 or -1. */
int xp_run_cases(xside *s);
/* One write each way, checked: the connection works. 0 or -1. */
int xp_sanity(xside *s);
/* The survivor of a peer killed with SIGKILL while WQEs are posted. 0 or -1. */
int xp_survive(xside *s);
/* The victim: waits to be killed. Returns only on a failure (-1). */
int xp_await_death(xside *s);

#endif /* GIC_XPROC_H */
