#!/bin/bash
# Deep-chain timings: traverse (plain, --top 3, --list, --export) beside find and du.
# Run from a directory holding the chains c10000, c50000 and c200000 (d/d/d/..., made
# level by level with mkdirat and openat, as traverse/tests/deep.rs makes them); REPO is
# the repository.
: "${REPO:?set REPO to the repository}"
out=$REPO/docs/bench-runs/2026-11-25/deep
T=$REPO/target/release/traverse
for n in 10000 50000 200000; do
	cmds=("$T c$n" "$T --top 3 c$n" "$T --export /dev/shm/e.json c$n" "du -sb c$n")
	if [ $n -le 50000 ]; then
		cmds+=("$T --list c$n" "find c$n")
	fi
	hyperfine -N --runs 3 --warmup 1 --output=null --export-json "$out/chain-$n.json" "${cmds[@]}"
done
uptime
