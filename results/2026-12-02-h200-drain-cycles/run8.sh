#!/bin/bash
# Call 8: the GPU test runner on the merged code (a0ed22a; binaries built at
# ea7682a, which adds notes only), carried in devbin8/b.txz (not committed).
mkdir -p /tmp/g && tar xJf devbin8/b.txz -C /tmp/g && GIC_GPU_BIN=/tmp/g/b timeout -s KILL 540 bash scripts/gpu-test.sh 2>&1 | grep -E '^(PASS|FAIL|SKIP)|passed' | tail -40
