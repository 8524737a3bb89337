/* Connection-record wire format: see gic/conn.h. */
#include <errno.h>
#include <string.h>

#include "gic/conn.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* FNV-1a, 32 bits. */
static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int fields_valid(const gic_conn_info *c)
{
	return c->qpn < (1u << 24) && c->psn < (1u << 24) && c->mtu >= 1 && c->mtu <= 5;
}

int gic_conn_pack(const gic_conn_info *c, uint8_t *buf, size_t len)
{
	if (!c || !buf || !fields_valid(c))
		return EINVAL;
	if (len < GIC_CONN_WIRE_BYTES)
		return ENOSPC;
	memset(buf, 0, GIC_CONN_WIRE_BYTES);
	memcpy(buf, "GICC", 4);
	put16(buf + 4, GIC_CONN_VERSION);
	put16(buf + 6, GIC_CONN_WIRE_BYTES);
	put32(buf + 8, c->qpn);
	put32(buf + 12, c->psn);
	put16(buf + 16, c->lid);
	buf[18] = c->port;
	buf[19] = c->mtu;
	memcpy(buf + 20, c->gid, 16);
	put64(buf + 36, c->addr);
	put32(buf + 44, c->rkey);
	put32(buf + 48, c->flags);
	put32(buf + 60, fnv1a(buf, 60));
	return 0;
}

static int bad(const char **why, const char *what)
{
	if (why)
		*why = what;
	return EPROTO;
}

int gic_conn_unpack(const uint8_t *buf, size_t len, gic_conn_info *c, const char **why)
{
	if (!buf || !c)
		return EINVAL;
	if (len < GIC_CONN_WIRE_BYTES)
		return bad(why, "record shorter than 64 bytes");
	if (memcmp(buf, "GICC", 4))
		return bad(why, "magic is not GICC");
	if (get16(buf + 4) != GIC_CONN_VERSION)
		return bad(why, "unknown version");
	if (get16(buf + 6) != GIC_CONN_WIRE_BYTES)
		return bad(why, "length field is not 64");
	if (get32(buf + 60) != fnv1a(buf, 60))
		return bad(why, "checksum mismatch (corrupted record)");
	memset(c, 0, sizeof(*c));
	c->qpn = get32(buf + 8);
	c->psn = get32(buf + 12);
	c->lid = get16(buf + 16);
	c->port = buf[18];
	c->mtu = buf[19];
	memcpy(c->gid, buf + 20, 16);
	c->addr = get64(buf + 36);
	c->rkey = get32(buf + 44);
	c->flags = get32(buf + 48);
	if (!fields_valid(c))
		return bad(why, "qpn, psn or mtu out of range");
	return 0;
}
