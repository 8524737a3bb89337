/*
 * devmem.h - GPU memory behind the CPU engine (gic/softnic_devmem.h): the
 * CUDA part's operations, how a part attaches to a softnic, and the
 * engine's entry points for WQEs whose regions are GPU memory. Not a
 * public header.
 *
 * devmem.c stays free of CUDA: it keeps which softnic has which part,
 * builds each WQE's copy list, and turns failures into syndromes and one
 * line on stderr; the part (devmem_cuda.cu) does every CUDA call. Tests
 * attach parts of their own to check the routing without a GPU.
 */
#ifndef SOFTNIC_DEVMEM_H
#define SOFTNIC_DEVMEM_H

#include <stddef.h>
#include <stdint.h>

#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One copy: either end host memory or GPU memory of this process
 * (including a peer's buffer opened here). */
typedef struct devmem_seg {
	void *dst;
	const void *src;
	size_t len;
} devmem_seg;

/* One atomic on GPU memory, as softnic_wqe carries it (host byte order). */
typedef struct devmem_atomic {
	uint8_t opcode;  /* GIC_OPCODE_ATOMIC_FA, _CS, _MASKED_FA, _MASKED_CS */
	uint8_t size;    /* 4 or 8 */
	uint64_t add;    /* the addend, or the swap value of compare-swaps */
	uint64_t cmp;
	uint64_t swap_mask;
	uint64_t cmp_mask;
} devmem_atomic;

/* A part's operations. They run on engine threads (any number, so each
 * serializes itself) and return 0 or an errno with a text in why; each
 * waits with a time limit. */
typedef struct devmem_ops {
	/* Copies n segments and waits until they are done. */
	int (*move)(void *ctx, const devmem_seg *seg, int n, char *why, size_t len);
	/* Runs a on the 4- or 8-byte target t; *old: the value it held. */
	int (*atomic)(void *ctx, const devmem_atomic *a, void *t, uint64_t *old, char *why,
		      size_t len);
	/* At softnic_close, after the engines stopped. */
	void (*release)(void *ctx);
} devmem_ops;

/* Attaches a part to a CPU-engine softnic (once). EINVAL: a GPU-engine
 * softnic, or one attached already. */
int softnic_devmem_attach(softnic *nic, const devmem_ops *ops, void *ctx);

/* softnic_close, after the engines stopped and GPU buffers of peers were
 * closed: lets the part go. */
void softnic_devmem_release(softnic *nic);

/* Gives an MR registered without rights the rights access, marked GPU
 * memory (SNX_MR_DEVICE), in one store: a lookup never sees rights on GPU
 * memory without the mark. */
void softnic_mr_to_device(softnic_mr *mr, int access);

#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_DEVMEM_H */
