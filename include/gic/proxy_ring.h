/*
 * gic/proxy_ring.h - mini-proxy descriptor rings: the producer side, written
 * once for host threads and GPU threads.
 *
 * A ring is 2^log_slot_cnt descriptor slots (gic/proxy_desc.h) in host
 * memory (pinned and mapped into the GPU for GPU producers), and a control
 * line, also in host memory, where the ring's worker publishes how far it
 * has got. Producers see a ring through a gic_proxy_ring view, filled by
 * gic_proxy_ring_view() (gic/proxy.h). The view holds the producer state
 * (the head; the tuned protocol's cached progress), so it lives where the
 * producers run: host memory for host threads, GPU memory for GPU threads
 * (the baseline head takes GPU-scope atomics). Use one view per ring.
 *
 * Positions are 64-bit counts of enqueues; position pos uses slot
 * pos & (slot_cnt - 1). Position pos may be written once the worker's
 * progress (ctl->consumed) exceeds pos - slot_cnt: that is the
 * back-pressure, and nothing is ever overwritten before the worker is done
 * with it. A producer that finds the ring full waits, re-reading the
 * progress, until its deadline (ETIMEDOUT), or until the worker reports
 * that it stopped on an error (EIO).
 *
 * Two handoff protocols (paper §4.1, "Reducing the proxy enqueue cost"):
 *  - baseline: any number of producers. A relaxed atomic add on the shared
 *    head reserves a position; one read of the host-resident progress per
 *    enqueue checks space; the payload word is stored, then the header word
 *    (which carries validity) with a system-scope release.
 *  - tuned: one producer per ring. The head is private; the progress is
 *    cached in the view and re-read only when the ring looks full; validity
 *    is in the descriptor, so the enqueue is one 16-byte store on the device
 *    (a posted PCIe write). On the host it is two 8-byte atomic stores, the
 *    payload word, then the header word with release, so that the worker's
 *    acquire load of the header orders its read of the payload.
 *
 * Errors: 0, or a positive errno: ETIMEDOUT (deadline passed), EIO (the
 * ring's worker stopped on an error: gic_proxy_error() says which request
 * failed and why). A baseline producer that fails has still reserved its
 * position, which is never filled: the ring is unusable afterwards (the
 * worker waits at that hole). A tuned producer that fails leaves the ring
 * as it was and may retry.
 */
#ifndef GIC_PROXY_RING_H
#define GIC_PROXY_RING_H

#include "gic/proxy_desc.h"

#if !GIC_ON_DEVICE
#include <time.h>
#endif

enum gic_proxy_protocol {
	GIC_PROXY_BASELINE = 0, /* atomic reservation, progress read, sys release */
	GIC_PROXY_TUNED = 1,    /* one producer, cached progress, one 16-byte store */
};

/* Host-resident control line of one ring, written only by its worker. */
typedef struct gic_proxy_ring_ctl {
	uint64_t consumed;  /* positions below this are done: written, counted */
	uint32_t failed;    /* 1 once the ring's worker stopped on an error */
	uint32_t reserved;
	uint8_t pad[48];    /* the line is the worker's alone */
} gic_proxy_ring_ctl;

GIC_STATIC_ASSERT(sizeof(gic_proxy_ring_ctl) == 64, "one cache line");

/* A producer's view of one ring (gic_proxy_ring_view() fills it). */
typedef struct gic_proxy_ring {
	uint64_t head;            /* next position; baseline: shared, atomic adds */
	uint64_t cached_consumed; /* tuned: the progress as last read */
	uint64_t progress_reads;  /* tuned: reads of ctl->consumed (a statistic) */
	gic_proxy_desc *slots;    /* slot_cnt descriptors, host memory */
	gic_proxy_ring_ctl *ctl;  /* host memory */
	uint32_t slot_cnt;        /* power of two */
	uint32_t log_slot_cnt;
	uint32_t protocol;        /* GIC_PROXY_BASELINE or GIC_PROXY_TUNED */
	uint32_t index;           /* ring number within its proxy */
	/* Tuned producer's cursor, kept so that an enqueue with room left is
	 * one OR and one store: */
	gic_proxy_desc *next_slot; /* the slot of position head */
	uint64_t phase_bit;        /* head's phase, in header position */
	uint64_t room_end;         /* cached_consumed + slot_cnt: head below it has room */
} gic_proxy_ring;

/* ------------------------------------------------------------------ */
/* Waiting. */

/* One step of a producer's spin-wait: a pause. On the host, every 64th
 * step sleeps for about a microsecond (the timer slack makes it more), so
 * that producers, workers and NIC engines oversubscribing a small machine
 * (CI) still make progress: yields do not hand a core over reliably there.
 * Host producers are test drivers; a GPU producer never sleeps. */
GIC_HD void gic_proxy_backoff(uint32_t *spins)
{
	++*spins;
	gic_cpu_relax();
#if !GIC_ON_DEVICE
	if ((*spins & 63u) == 0) {
		struct timespec ts = { 0, 1000 };
		nanosleep(&ts, NULL);
	}
#endif
}

/* 1 once the worker serving the ring has stopped on an error. Acquire:
 * pairs with the worker's release of the flag, so that what the worker
 * completed before it failed (counters, progress, the data they cover) is
 * visible to a producer that saw the flag. Read only when giving up is in
 * question, so its cost (a host-memory read from a GPU) is rare. */
GIC_HD int gic_proxy_ring_failed(const gic_proxy_ring *ring)
{
	return gic_ld_acquire_sys_u32(&ring->ctl->failed) != 0;
}

/* ------------------------------------------------------------------ */
/* Publishing one descriptor. */

/* Baseline publication: the payload word, then the header word with a
 * system-scope release, which orders the payload store (and every earlier
 * store of this thread, e.g. a pointer request's source bytes) before the
 * validity the worker acquires. */
GIC_HD void gic_proxy_slot_store_release(gic_proxy_desc *slot, uint64_t header, uint64_t payload)
{
	gic_st_relaxed_sys_u64(&slot->payload, payload);
	gic_st_release_sys_u64(&slot->header, header);
}

/* Tuned publication. Device: one 16-byte store of both words, no fence: a
 * single posted PCIe write that the worker observes whole. (The PTX memory
 * model describes a vector store as element stores in unspecified order;
 * the tuned protocol relies, as the paper's does, on an aligned 16-byte
 * store reaching host memory as one write.) Host: payload, then header
 * with release, as the baseline does: the two 8-byte atomic stores that
 * stand for the one 16-byte store, in a form TSan checks. */
GIC_HD void gic_proxy_slot_store16(gic_proxy_desc *slot, uint64_t header, uint64_t payload)
{
#if GIC_ON_DEVICE
	asm volatile("st.relaxed.sys.global.v2.b64 [%0], {%1, %2};"
		     ::"l"(slot), "l"(header), "l"(payload) : "memory");
#else
	gic_proxy_slot_store_release(slot, header, payload);
#endif
}

/* Waits until position pos is free, i.e. the worker's progress exceeds
 * pos - slot_cnt, reading the host-resident progress on each try (and
 * caching it in the view). The acquire load orders the worker's reads of
 * the slot's previous descriptor before our overwrite of it. With desc
 * not NULL, publishes it at pos (header with its phase, release) in the
 * branch that found room: GPU lanes of one warp that still wait would
 * otherwise hold a lane whose slot is free at the loop's exit, and the
 * worker would wait for that lane's descriptor forever. */
GIC_HD int gic_proxy_wait_space(gic_proxy_ring *ring, uint64_t pos, const gic_proxy_desc *desc,
				uint64_t deadline_ns)
{
	uint32_t spins = 0;

	for (;;) {
		uint64_t consumed = gic_ld_acquire_sys_u64(&ring->ctl->consumed);

		if (ring->protocol == GIC_PROXY_TUNED) {
			ring->cached_consumed = consumed;
			ring->progress_reads++;
		}
		if (pos - consumed < ring->slot_cnt) {
			if (desc)
				gic_proxy_slot_store_release(&ring->slots[pos & (ring->slot_cnt - 1)],
							     desc->header, desc->payload);
			return 0;
		}
		if (gic_proxy_ring_failed(ring))
			return EIO;
		if (gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		gic_proxy_backoff(&spins);
	}
}

/* ------------------------------------------------------------------ */
/* Enqueue. desc comes from a gic_proxy_desc_* builder (its phase is
 * ignored). On success *pos_out (when not NULL) gets the position used. */

/* Baseline: any number of producers per ring. */
GIC_HD int gic_proxy_enqueue_baseline(gic_proxy_ring *ring, const gic_proxy_desc *desc,
				      uint64_t deadline_ns, uint64_t *pos_out)
{
	/* Relaxed: the add only hands out positions; the header's release
	 * publishes the descriptor. */
	uint64_t pos = gic_atomic_add_relaxed_gpu_u64(&ring->head, 1);
	gic_proxy_desc d;

	d.header = gic_proxy_header_with_phase(desc->header, gic_proxy_phase(pos, ring->log_slot_cnt));
	d.payload = desc->payload;
	if (pos_out)
		*pos_out = pos;
	return gic_proxy_wait_space(ring, pos, &d, deadline_ns);
}

/* Tuned, slow path: the cached progress says position pos may not be free;
 * re-reads it (waiting for room) and refreshes the cursor's bound. */
GIC_HD int gic_proxy_tuned_refresh(gic_proxy_ring *ring, uint64_t pos, uint64_t deadline_ns)
{
	int rc = gic_proxy_wait_space(ring, pos, NULL, deadline_ns);

	ring->room_end = ring->cached_consumed + ring->slot_cnt;
	return rc;
}

/* Tuned: the ring's one producer. The progress is re-read only when the
 * cached bound says the ring is full; the slot and its phase come from the
 * view's cursor, advanced after the store. A pointer request's source
 * bytes must be visible before the worker (and the NIC) read them: on the
 * device that takes a system-scope fence before the store; inline requests
 * need nothing. */
GIC_HD int gic_proxy_enqueue_tuned(gic_proxy_ring *ring, const gic_proxy_desc *desc,
				   uint64_t deadline_ns, uint64_t *pos_out)
{
	uint64_t pos = ring->head;
	uint64_t header = (desc->header & ~(1ull << GIC_PROXY_PHASE_SHIFT)) | ring->phase_bit;

	if (pos_out)
		*pos_out = pos;
	if (pos >= ring->room_end) {
		int rc = gic_proxy_tuned_refresh(ring, pos, deadline_ns);

		if (rc)
			return rc;
	}
#if GIC_ON_DEVICE
	if (gic_proxy_desc_op(header) == GIC_PROXY_OP_POINTER)
		gic_fence_sc_sys(); /* source bytes before the descriptor */
#endif
	gic_proxy_slot_store16(ring->next_slot, header, desc->payload);
	ring->head = pos + 1;
	if (++ring->next_slot == ring->slots + ring->slot_cnt) {
		/* Wrapped: the next pass carries the other phase. */
		ring->next_slot = ring->slots;
		ring->phase_bit ^= 1ull << GIC_PROXY_PHASE_SHIFT;
	}
	return 0;
}

/* The ring's protocol. A producer that keeps a tuned view in registers
 * should call gic_proxy_enqueue_tuned() itself: this dispatcher also holds
 * the baseline's atomic on the view's head, whose address then escapes and
 * sends the view to local memory. */
GIC_HD int gic_proxy_enqueue(gic_proxy_ring *ring, const gic_proxy_desc *desc,
			     uint64_t deadline_ns, uint64_t *pos_out)
{
	if (ring->protocol == GIC_PROXY_TUNED)
		return gic_proxy_enqueue_tuned(ring, desc, deadline_ns, pos_out);
	return gic_proxy_enqueue_baseline(ring, desc, deadline_ns, pos_out);
}

/* ------------------------------------------------------------------ */
/* Completion. */

/* Waits until *counter >= target. The acquire load orders the caller's
 * later reads (e.g. of the destination) after the worker's bump, which
 * came after the writes' completion. ring (may be NULL) names the ring whose
 * worker bumps the counter: its failure ends the wait with EIO; it is
 * checked every 1024 polls and at the deadline, so that a GPU waiting on a
 * GPU-resident counter reads host memory only rarely. */
GIC_HD int gic_proxy_wait_counter(const gic_proxy_ring *ring, const uint64_t *counter,
				  uint64_t target, uint64_t deadline_ns)
{
	uint32_t spins = 0;

	for (;;) {
		int late;

		if (gic_ld_acquire_sys_u64(counter) >= target)
			return 0;
		late = gic_now_ns() > deadline_ns;
		if (ring && (late || (spins & 1023u) == 1023u) && gic_proxy_ring_failed(ring))
			return EIO;
		if (late)
			return ETIMEDOUT;
		gic_proxy_backoff(&spins);
	}
}

#endif /* GIC_PROXY_RING_H */
