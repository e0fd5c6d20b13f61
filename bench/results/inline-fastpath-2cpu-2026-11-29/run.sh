#!/bin/sh
# How the figures of this folder were made (README.md).  BEFORE and AFTER: two copies of
# locktune/_native whose lib/ holds the library before and after the change; the lock
# benchmark and the rewritten bank pick the library up through LD_LIBRARY_PATH.
set -e
BEFORE=${BEFORE:?the _native copy with the old library}
AFTER=${AFTER:?the _native copy with the new library}
OUT=${OUT:-.}
for i in 1 2 3; do
    for v in before after; do
        lib=$BEFORE/lib; [ $v = after ] && lib=$AFTER/lib
        mkdir -p "$OUT/$v-$i"
        LD_LIBRARY_PATH=$lib locktune bench locks --sweep uncontended \
            --algos posix,shfl-block,shfl,auto,mcs,ticket,spin --repeats 5 --duration 0.5 \
            --out "$OUT/$v-$i" > "$OUT/$v-$i/tables.txt" 2>&1
    done
done
# bank (testsuite/apps) at 1 thread, 3,000,000 transfers: the original, and the tree
# `locktune rewrite` made of it (no profile) under posix and shfl-block, 10 interleaved rounds.
# ORIG and REWR: the two builds.
tp() { grep throughput | awk '{print $2}'; }
for r in $(seq 10); do
    echo "orig $("$ORIG"/bank 1 3000000 | tp)"
    for a in posix shfl-block; do
        for v in before after; do
            lib=$BEFORE/lib; [ $v = after ] && lib=$AFTER/lib
            echo "$a-$v $(LD_LIBRARY_PATH=$lib LOCKTUNE_ALGO=default=$a "$REWR"/bank 1 3000000 | tp)"
        done
    done
done > "$OUT/bank-1-thread.txt"
python3 "$(dirname "$0")/aggregate.py" "$OUT"
