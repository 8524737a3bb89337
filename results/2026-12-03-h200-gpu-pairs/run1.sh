#!/bin/bash
# Call 1 (the session's call 6): check.sh with the merged gic (devbin15/fin.txz,
# committed engine); logs and JSON under $OUT/pairs, packed.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/fin && tar xJf devbin15/fin.txz -C /tmp/fin
GIC=/tmp/fin/b/bench/gic/gic OUT=$OUT/pairs bash results/2026-12-03-h200-gpu-pairs/check.sh
pkill -9 -f '__pe-pair' 2>/dev/null
cd $OUT && tar czf pairs.tgz pairs && rm -rf pairs
