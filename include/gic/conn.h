/*
 * gic/conn.h - what two PEs exchange to connect an RC QP pair, and its
 * wire format for a bootstrap (in-process, MPI) to carry.
 *
 * Wire format: 64 bytes, little-endian, independent of the host's struct
 * layout:
 *   0  magic "GICC"        4  version (1)     6  length (64)
 *   8  qpn (24 bits)      12  psn (24 bits)   16  lid   18  port  19  mtu (1..5)
 *  20  gid[16]            36  addr (region base)       44  rkey
 *  48  flags              52  reserved (8, zero)       60  checksum
 * The checksum is FNV-1a (32 bits) of bytes 0..59.
 *
 * Errors: 0 or a positive errno (EINVAL: a NULL argument or a field out of
 * range; ENOSPC: buffer too small; EPROTO: not a valid record, with the
 * failed check named in *why when why is not NULL).
 */
#ifndef GIC_CONN_H
#define GIC_CONN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	GIC_CONN_WIRE_BYTES = 64,
	GIC_CONN_VERSION = 1,
	GIC_CONN_GID_VALID = 1u << 0, /* RoCE / global routing: gid is meaningful */
};

typedef struct gic_conn_info {
	uint32_t qpn;      /* < 2^24 */
	uint32_t psn;      /* < 2^24 */
	uint16_t lid;
	uint8_t port;
	uint8_t mtu;       /* enum ibv_mtu: 1 (256 B) .. 5 (4096 B) */
	uint8_t gid[16];
	uint64_t addr;     /* base of the region the peer may write */
	uint32_t rkey;
	uint32_t flags;    /* GIC_CONN_* */
} gic_conn_info;

/* Writes info's wire form into buf[0, 64). */
int gic_conn_pack(const gic_conn_info *info, uint8_t *buf, size_t len);

/* Reads a wire form; on EPROTO, *why (may be NULL) names the failed check. */
int gic_conn_unpack(const uint8_t *buf, size_t len, gic_conn_info *out, const char **why);

#ifdef __cplusplus
}
#endif

#endif /* GIC_CONN_H */
