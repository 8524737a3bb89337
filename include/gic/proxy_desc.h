/*
 * gic/proxy_desc.h - the 16-byte mini-proxy request descriptor, shared by
 * host C and device CUDA.
 *
 * A producer (GPU thread, or host thread in the tests) asks a proxy worker
 * for one RDMA write by storing one descriptor into a ring slot. The
 * descriptor says what to write (an 8-byte inline value, or an offset into
 * the source region registered for the proxy), where (an offset into the
 * destination region the ring's worker knows the base and rkey of), how
 * long, and which completion counter the worker bumps once the write is
 * visible at the target.
 *
 * Layout: two little-endian 64-bit words, 16-byte aligned so that a device
 * thread can store the whole descriptor with one 16-byte store.
 *
 *   byte 0  header  (the word that carries validity)
 *           bits  0..31  dst_offset  byte offset into the destination region
 *           bits 32..53  length      bytes to write: inline 0..8,
 *                                    pointer 0..GIC_PROXY_DESC_MAX_LENGTH
 *           bits 54..61  counter     index of the completion counter (0..255)
 *           bit  62      op          0: inline (payload is the value),
 *                                    1: pointer (payload is a source offset)
 *           bit  63      phase       validity; see below
 *   byte 8  payload
 *           inline:  the bytes to write, in memory order (the value's first
 *                    `length` bytes as it lies in little-endian memory)
 *           pointer: byte offset into the source region
 *
 * Validity (the phase bit). Ring memory starts zeroed. The descriptor at
 * ring position pos (a 64-bit count of enqueues; slot pos % slot_cnt) is
 * valid when its phase equals gic_proxy_phase(pos): 1 on pass 0 over the
 * ring, 0 on pass 1, 1 on pass 2, ... A slot therefore holds either the
 * descriptor of its previous pass (the other phase: not yet valid) or the
 * new one, never anything the consumer could take twice: back-pressure
 * keeps every producer within one pass of the consumer, so a slot is never
 * two passes stale. Nobody clears a slot after use.
 */
#ifndef GIC_PROXY_DESC_H
#define GIC_PROXY_DESC_H

#include "gic/mlx5_format.h" /* gic/port.h, GIC_STATIC_ASSERT, GIC_ALIGN16 */

#if !defined(__cplusplus)
#include <stdalign.h>
#endif

typedef struct GIC_ALIGN16 gic_proxy_desc {
	uint64_t header;  /* dst_offset | length | counter | op | phase (above) */
	uint64_t payload; /* inline bytes, or the source offset */
} gic_proxy_desc;

enum gic_proxy_op {
	GIC_PROXY_OP_INLINE = 0,  /* write payload's first `length` bytes */
	GIC_PROXY_OP_POINTER = 1, /* write `length` bytes from source + payload */
};

/* Bit positions and widths of the header fields. */
#define GIC_PROXY_DST_SHIFT 0
#define GIC_PROXY_DST_BITS 32
#define GIC_PROXY_LEN_SHIFT 32
#define GIC_PROXY_LEN_BITS 22
#define GIC_PROXY_CTR_SHIFT 54
#define GIC_PROXY_CTR_BITS 8
#define GIC_PROXY_OP_SHIFT 62
#define GIC_PROXY_PHASE_SHIFT 63

#define GIC_PROXY_FIELD_MASK(bits) ((1ull << (bits)) - 1)

/* Limits a descriptor can express. */
#define GIC_PROXY_DESC_MAX_DST_OFFSET GIC_PROXY_FIELD_MASK(GIC_PROXY_DST_BITS)
#define GIC_PROXY_DESC_MAX_LENGTH GIC_PROXY_FIELD_MASK(GIC_PROXY_LEN_BITS)
#define GIC_PROXY_DESC_MAX_INLINE 8u
#define GIC_PROXY_DESC_MAX_COUNTERS (1u << GIC_PROXY_CTR_BITS)

GIC_STATIC_ASSERT(sizeof(gic_proxy_desc) == 16, "a descriptor is 16 bytes");
GIC_STATIC_ASSERT(offsetof(gic_proxy_desc, header) == 0, "header is bytes 0..7");
GIC_STATIC_ASSERT(offsetof(gic_proxy_desc, payload) == 8, "payload is bytes 8..15");
GIC_STATIC_ASSERT(alignof(gic_proxy_desc) == 16, "one 16-byte store needs 16-byte alignment");
GIC_STATIC_ASSERT(GIC_PROXY_DST_SHIFT + GIC_PROXY_DST_BITS == GIC_PROXY_LEN_SHIFT &&
			  GIC_PROXY_LEN_SHIFT + GIC_PROXY_LEN_BITS == GIC_PROXY_CTR_SHIFT &&
			  GIC_PROXY_CTR_SHIFT + GIC_PROXY_CTR_BITS == GIC_PROXY_OP_SHIFT &&
			  GIC_PROXY_OP_SHIFT + 1 == GIC_PROXY_PHASE_SHIFT &&
			  GIC_PROXY_PHASE_SHIFT == 63,
		  "header fields tile the 64-bit word without overlap");

/* ------------------------------------------------------------------ */
/* Field readers (take the header word). */

GIC_HD uint32_t gic_proxy_desc_dst_offset(uint64_t header)
{
	return (uint32_t)(header >> GIC_PROXY_DST_SHIFT);
}

GIC_HD uint32_t gic_proxy_desc_length(uint64_t header)
{
	return (uint32_t)((header >> GIC_PROXY_LEN_SHIFT) & GIC_PROXY_FIELD_MASK(GIC_PROXY_LEN_BITS));
}

GIC_HD uint32_t gic_proxy_desc_counter(uint64_t header)
{
	return (uint32_t)((header >> GIC_PROXY_CTR_SHIFT) & GIC_PROXY_FIELD_MASK(GIC_PROXY_CTR_BITS));
}

GIC_HD uint32_t gic_proxy_desc_op(uint64_t header)
{
	return (uint32_t)((header >> GIC_PROXY_OP_SHIFT) & 1u);
}

GIC_HD uint32_t gic_proxy_desc_phase(uint64_t header)
{
	return (uint32_t)(header >> GIC_PROXY_PHASE_SHIFT);
}

/* The phase a valid descriptor at ring position pos carries, in a ring of
 * 2^log_slot_cnt slots: 1 on even passes, 0 on odd ones (zeroed memory is
 * invalid on pass 0). */
GIC_HD uint32_t gic_proxy_phase(uint64_t pos, uint32_t log_slot_cnt)
{
	return (uint32_t)((pos >> log_slot_cnt) & 1u) ^ 1u;
}

/* header with its phase bit set to phase (0 or 1). */
GIC_HD uint64_t gic_proxy_header_with_phase(uint64_t header, uint32_t phase)
{
	return (header & ~(1ull << GIC_PROXY_PHASE_SHIFT)) |
	       ((uint64_t)(phase & 1u) << GIC_PROXY_PHASE_SHIFT);
}

/* ------------------------------------------------------------------ */
/* Builders. Each fills *out with phase 0 (the enqueue sets the phase) and
 * returns 0, or EINVAL when a field does not fit. */

GIC_HD uint64_t gic_proxy_make_header(uint64_t dst_offset, uint32_t length, uint32_t counter,
				      uint32_t op)
{
	return (dst_offset << GIC_PROXY_DST_SHIFT) | ((uint64_t)length << GIC_PROXY_LEN_SHIFT) |
	       ((uint64_t)counter << GIC_PROXY_CTR_SHIFT) | ((uint64_t)op << GIC_PROXY_OP_SHIFT);
}

/* Inline write: the first len (0..8) bytes of value, as it lies in
 * little-endian memory, go to destination + dst_offset. */
GIC_HD int gic_proxy_desc_inline(gic_proxy_desc *out, uint64_t dst_offset, uint64_t value,
				 uint32_t len, uint32_t counter)
{
	if (dst_offset > GIC_PROXY_DESC_MAX_DST_OFFSET || len > GIC_PROXY_DESC_MAX_INLINE ||
	    counter >= GIC_PROXY_DESC_MAX_COUNTERS)
		return EINVAL;
	out->header = gic_proxy_make_header(dst_offset, len, counter, GIC_PROXY_OP_INLINE);
	out->payload = value;
	return 0;
}

/* Pointer write: len bytes from source + src_offset go to destination +
 * dst_offset. (len 0 is posted as an empty inline write: an mlx5 data
 * segment reads a byte count of 0 as 2 GiB.) */
GIC_HD int gic_proxy_desc_pointer(gic_proxy_desc *out, uint64_t dst_offset, uint64_t src_offset,
				  uint32_t len, uint32_t counter)
{
	if (dst_offset > GIC_PROXY_DESC_MAX_DST_OFFSET || len > GIC_PROXY_DESC_MAX_LENGTH ||
	    counter >= GIC_PROXY_DESC_MAX_COUNTERS)
		return EINVAL;
	out->header = gic_proxy_make_header(dst_offset, len, counter, GIC_PROXY_OP_POINTER);
	out->payload = src_offset;
	return 0;
}

#endif /* GIC_PROXY_DESC_H */
