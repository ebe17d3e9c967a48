#!/usr/bin/env bash
# The rounds behind round*.json: hyperfine over a tree, warm, the order of
# the commands reversed every other round. Usage: run.sh DIR OUT ROUNDS
# (TRAVERSE, DUST, PDU: the programs; dust and pdu are left out when absent).
set -euo pipefail
D=$1 out=$2 rounds=$3
T=${TRAVERSE:-target/release/traverse}
names=(plain tree tree-a d1 top20)
cmds=("$T $D" "$T --tree $D" "$T --tree -a $D" "$T -d 1 $D" "$T --top 20 $D")
if command -v "${DUST:-dust}" >/dev/null; then
	names+=(dust)
	cmds+=("${DUST:-dust} -s -P -c -n 40 $D")
fi
if command -v "${PDU:-pdu}" >/dev/null; then
	names+=(pdu)
	cmds+=("${PDU:-pdu} -q apparent-size $D")
fi
for r in $(seq 1 "$rounds"); do
	args=()
	n=${#names[@]}
	for ((k = 0; k < n; k++)); do
		if ((r % 2)); then i=$k; else i=$((n - 1 - k)); fi
		args+=(-n "${names[i]}" "${cmds[i]}")
	done
	uptime >>"$out/load.txt"
	hyperfine -N --warmup 2 --runs 10 --export-json "$out/round$r.json" "${args[@]}" >/dev/null
done
uptime >>"$out/load.txt"
