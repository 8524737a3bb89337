/*
 * src/nic/softnic/green.h - the GPU engine's SM placement (gic/softnic_gpu.h,
 * "SM placement"): two CUDA green contexts splitting one device, the
 * engine's and the callers', each with a non-blocking stream. The driver
 * API is reached through cudaGetDriverEntryPointByVersion, so a program
 * linked with this starts on a driver without green contexts (and fails
 * here, saying so, only when asked for a split).
 *
 * Errors: 0 or a positive errno, the reason on stderr, prefixed
 * "softnic GPU engine: engine_sms N:".
 */
#ifndef GIC_SOFTNIC_GREEN_H
#define GIC_SOFTNIC_GREEN_H

#include <cuda_runtime.h>

#include "gic/softnic_gpu.h"

typedef struct snx_green {
	int on;                     /* 1: the contexts and streams below exist */
	void *engine_ctx, *caller_ctx; /* CUgreenCtx */
	cudaStream_t engine_stream, caller_stream;
	softnic_gpu_placement pl;
} snx_green;

/* The split of device for engine_sms SMs (softnic_gpu_sm_split). */
int snx_green_split(int device, int engine_sms, softnic_gpu_placement *p);

/* Makes both green contexts and their streams on device (the current
 * device, its primary context initialised) and fills gr->pl with the SM
 * counts the contexts got (cuGreenCtxGetDevResource). Nothing may run in
 * them yet. On failure, everything made is destroyed. */
int snx_green_open(snx_green *gr, int device, int engine_sms);

/* Runs the SM probe on both streams, before the engine starts: each
 * records the SMs its blocks ran on into 2 x 32 words of bitmap (memory
 * of the primary context the device reaches: this is also the check that
 * such memory works from a green context) and gr->pl's _seen fields are
 * filled. EIO when a probe fails or does not end within 5 s. */
int snx_green_probe(snx_green *gr, unsigned *bitmap);

/* Destroys the streams, then the contexts (after the engine stopped and
 * no caller work is left on the caller stream). */
void snx_green_close(snx_green *gr);

#endif /* GIC_SOFTNIC_GREEN_H */
