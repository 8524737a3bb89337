/*
 * bench/gic/exp_conns.h - `gic conns`: message rate against the number of
 * active connections (paper §4.3.3, Figure 10): traffic role, writes per
 * connection visit, RC against DC.
 *
 * Two PEs. "This PE" is PE0. A configuration has C connections and W
 * writes per visit. Posters (GPU threads, or host threads with --host)
 * own connections round-robin (poster p owns c = p, p + P, ...) and visit
 * them in turn, posting W 8-byte writes per visit; the final completion
 * drain is part of the time. Roles:
 *   send  PE0's posters write through C connections to PE1;
 *   recv  PE1's posters write through C connections into PE0;
 *   both  both at once (an RC connection carries both directions).
 * The rate of a row is the writes PE0 sends (send, both) or receives
 * (recv) over the time from the first post to the last completion of
 * that direction: in "both" it is the sender's rate while its NIC also
 * receives, as the paper's simultaneous curve.
 *
 * Transports: rc (a QP per connection) or dc (each poster owns a DCI,
 * each connection is a DCT of the target PE, every WQE carries the DCT's
 * address vector). DC runs in the host mode, on either provider.
 *
 * Providers (the common --provider flag): softnic (the default; GPU mode
 * on either engine, host mode through gic/provider.h on the CPU engine)
 * and mlx5 (host mode through gic/provider.h; both PEs on one NIC in
 * loopback). softnic rows are functional checks: a software NIC has no
 * QP context cache, so the cost the paper measures is not modelled.
 *
 * Result names: "<role> <transport>, <C> conns, <W> writes/visit" with
 * metrics "message rate" (M msg/s) and "per-connection rate" (K msg/s);
 * params carry every knob; p50 is the median of the rounds.
 */
#ifndef GIC_BENCH_EXP_CONNS_H
#define GIC_BENCH_EXP_CONNS_H

#include "exp.h"
#include "gic/post.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	CONNS_SEND = 0, CONNS_RECV = 1, CONNS_BOTH = 2,   /* roles (bits of roles) */
	CONNS_RC = 0, CONNS_DC = 1,                       /* transports (bits) */
	CONNS_MAX_LIST = 16,
	CONNS_MAX_CONNS = 1024,
	CONNS_MAX_WRITES = 8192,
	CONNS_MAX_SLOTS = 16,     /* destination words per connection */
};

#define CONNS_SOFTNIC_NOTE \
	"functional check on softnic: the cost of many connections on a NIC (QP context " \
	"caching) is not modelled"

typedef struct conns_state {
	int nconns, conns[CONNS_MAX_LIST];    /* --conns */
	int nwrites, writes[CONNS_MAX_LIST];  /* --writes (per visit) */
	unsigned roles;                       /* --role: 1u << CONNS_SEND ... */
	unsigned transports;                  /* --transport: 1u << CONNS_RC ... */
} conns_state;

/* How one configuration posts (host and GPU alike). */
typedef struct conns_plan {
	int conns;      /* C */
	int writes;     /* W per visit */
	int slots;      /* destination words per connection: min(W, CONNS_MAX_SLOTS) */
	int passes;     /* visits of every connection per round */
	int db_every;   /* WQEs per doorbell within a visit (<= half the smallest ring) */
	int sig_every;  /* a WQE ending on a multiple of this is signaled (power of two,
			 * <= a quarter of the smallest ring) */
	uint64_t tag;   /* the round's payload tag */
} conns_plan;

/* "send", "recv", "both"; "rc", "dc" (NULL when out of range). */
const char *gic_conns_role_name(int role);
const char *gic_conns_transport_name(int transport);

/* Emits a configuration's two results ("message rate" from the per-round
 * rates in M msg/s, "per-connection rate" in K msg/s) with the name,
 * params, transport and note every mode shares. */
int gic_conns_emit(gic_sink *sink, int role, int transport, const conns_plan *p, int posters,
		   const double *rates, int rounds, int validated, const char *transport_name,
		   const char *extra_note);

/* The value of write j of pass `pass` on connection conn (nonzero). */
GIC_HD uint64_t conns_value(uint64_t tag, uint32_t conn, uint32_t pass, uint32_t j)
{
	uint64_t z = (tag << 44) ^ ((uint64_t)conn << 24) ^ ((uint64_t)pass << 14) ^ j;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

/* The last write of a visit that lands in slot s: the largest j < writes
 * with j % slots == s. */
GIC_HD uint32_t conns_last_j(const conns_plan *p, uint32_t s)
{
	return s + (uint32_t)((p->writes - 1 - (int)s) / p->slots) * (uint32_t)p->slots;
}

/* Byte offset of slot s of connection conn in a target region. */
GIC_HD uint64_t conns_slot_off(const conns_plan *p, uint32_t conn, uint32_t s)
{
	return ((uint64_t)conn * (uint64_t)p->slots + s) * 8u;
}

/* 1 when a WQE at [pos, pos + nbb) crosses a multiple of sig_every: it
 * is signaled, so that a CQE retires the ring at least that often. */
GIC_HD int conns_signal(const conns_plan *p, uint64_t pos, uint32_t nbb)
{
	return (pos + nbb) / (uint64_t)p->sig_every != pos / (uint64_t)p->sig_every;
}

/* One visit on an RC connection: W 8-byte inline writes on sq (exclusive
 * owner) into the connection's slots at base (the target region, rkey),
 * a doorbell every db_every WQEs and at the end, signaled as sig_every
 * says; the visit's last write is signaled too when last is 1 (the last
 * pass: the drain then needs no NOP). 0 or the errno of gic/post.h. */
GIC_HD int conns_visit_rc(gic_sq *sq, const conns_plan *p, uint64_t base, uint32_t rkey,
			  uint32_t conn, uint32_t pass, int last, int order, uint64_t deadline_ns)
{
	for (int j = 0; j < p->writes; j++) {
		uint64_t pos;
		int rc = gic_sq_reserve_excl(sq, 1, &pos, order, deadline_ns);
		int sig = conns_signal(p, pos, 1) || (last && j + 1 == p->writes);

		if (rc)
			return rc;
		gic_wqe_write_inline_u64(sq, pos,
					 base + conns_slot_off(p, conn, (uint32_t)j % (uint32_t)p->slots),
					 rkey, conns_value(p->tag, conn, pass, (uint32_t)j),
					 sig ? GIC_CTRL_CQ_UPDATE : 0);
		if (sig)
			gic_sq_note_signaled(sq, pos + 1, 0);
		if ((j + 1) % p->db_every == 0 || j + 1 == p->writes)
			gic_sq_publish_excl(sq, order);
	}
	return 0;
}

/* 1 when each of the p->conns x p->slots words of got (the target
 * region of direction dir, PE dir -> PE 1 - dir) holds its last write:
 * pass p->passes - 1's (dc 0), or pass 0's write s (dc 1: DC's one pass
 * of plain slots); else 0 after a message naming the first wrong slot. */
int conns_check(const conns_plan *p, const uint64_t *got, int dc, int dir);

/* GPU mode (bench/gic/gpu_conns.cu): softnic only; one result pair per
 * configuration. */
int gic_gpu_conns(const gic_opts *o, const conns_state *st, const gic_run_info *info,
		  gic_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_CONNS_H */
