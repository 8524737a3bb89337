/*
 * softnic's wire, the part objects.c and execute.c call (wire.c). Not a
 * public header: gic/softnic_wire.h is.
 */
#ifndef SOFTNIC_WIRE_H
#define SOFTNIC_WIRE_H

#include "softnic_internal.h"

/* A pass over a QP connected through the wire: completes what was
 * answered, puts what was announced on the wire. The caller holds the
 * QP's engine lock. Returns WQEs completed. */
int softnic_wire_progress(softnic_qp *qp, softnic_stats *st);

/* One round of the wire's responder work and peer checks (engine 0's
 * thread between passes, or the wire thread). Returns 1 when it did work. */
int softnic_wire_service(softnic *nic);

/* From softnic_qp_destroy(), once qp left its engine: tells the peer and
 * frees the connection (mirror, file). */
void softnic_wire_qp_destroyed(softnic_qp *qp);

/* From softnic_close(): stops the wire thread (first), then, last, frees
 * the rest and gives the QP-number block back. */
void softnic_wire_close(softnic *nic);
void softnic_wire_release(softnic *nic);

#endif /* SOFTNIC_WIRE_H */
