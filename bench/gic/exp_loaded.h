/*
 * bench/gic/exp_loaded.h - `gic loaded`: round trip of a probe while
 * background CTAs (host: threads) load both ends (paper Figure 6, Table 11).
 *
 * The probe ping-pongs one 8-byte write between PE0 and PE1 while
 * --bg-ctas background writers stream writes in both directions. With
 * --queue shared the probe posts on the background's queue (behind its
 * WQEs); with reserved it owns a queue of its own. --pace NS spaces each
 * background writer's posts (0: as fast as it can).
 *
 * Result names: "<path> <queue>" (e.g. "gda shared", "proxy reserved"),
 * with " paced" appended when --pace > 0; two results per configuration:
 * metric "loaded rtt" (us) for the probe and "background rate" (M msg/s)
 * for the load it carried meanwhile.
 */
#ifndef GIC_BENCH_EXP_LOADED_H
#define GIC_BENCH_EXP_LOADED_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queues (bits of loaded_state.queues). */
enum { GIC_LOADED_SHARED = 1u << 0, GIC_LOADED_RESERVED = 1u << 1 };

/* Paths. */
enum { GIC_LOADED_GDA = 0, GIC_LOADED_PROXY = 1 };

typedef struct loaded_state {
	int bg_ctas;      /* --bg-ctas N: background CTAs (GPU) or threads (host); 0..1024,
			   * default 64 (host: capped, see the result note) */
	unsigned queues;  /* --queue shared|reserved|both; default both */
	long pace_ns;     /* --pace NS: gap between a background writer's posts; 0: unpaced */
	int path;         /* --path gda|proxy; default gda */
} loaded_state;

/* GPU mode (bench/gic/gpu_loaded.cu). */
int gic_gpu_loaded(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		   gic_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_LOADED_H */
