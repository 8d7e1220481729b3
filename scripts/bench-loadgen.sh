#!/usr/bin/env bash
# bench-loadgen.sh: delivered packets/s of loadgen and of iperf3 -u -b 0 over
# the same veth between two network namespaces, side by side, at 64 and 1400
# byte UDP payloads; then loadgen's pacing accuracy at 100k packets/s,
# measured by the receiver.
#
# Needs root, iproute2 and python3 (to read iperf3's JSON); installs iperf3
# with apt-get when it is missing. Run from the repository root:
#   make bench-loadgen          (or: sudo scripts/bench-loadgen.sh)
# Environment: DURATION (seconds per trial, default 3), SIZES (default "64 1400").
#
# Only addresses inside the two namespaces created here (10.201.254.0/24)
# receive traffic. Namespaces are named wbt-<pid>-<n>, like the netns test
# harness's, so its stale-namespace cleanup also removes ours after a crash.
set -euo pipefail

DURATION=${DURATION:-3}
SIZES=${SIZES:-"64 1400"}
NS_SEND="wbt-$$-1"
NS_RECV="wbt-$$-2"
ADDR_SEND=10.201.254.1
ADDR_RECV=10.201.254.2
PORT=9000

. "$(dirname "$0")/lib.sh"

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces)"
command -v ip >/dev/null || die "needs ip (iproute2)"
command -v python3 >/dev/null || die "needs python3 to read iperf3's JSON"
need_iperf3


go build -o "$WORK/loadgen" ./loadgen

two_hosts "$NS_SEND" "$NS_RECV" veth0 "$ADDR_SEND" "$ADDR_RECV"

# wait_port NS PORT: until something listens on TCP PORT in namespace NS.
wait_port() {
	for _ in $(seq 100); do
		ip netns exec "$1" ss -Htln "sport = :$2" | grep -q . && return 0
		sleep 0.05
	done
	die "nothing listens on port $2 in $1"
}

# json_field FILE EXPR: evaluate a python expression over the JSON object d.
json_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

iperf3_pps() { # SIZE -> delivered packets/s
	ip netns exec "$NS_RECV" iperf3 -s -1 -B "$ADDR_RECV" -p 5201 >/dev/null 2>&1 &
	PIDS+=($!)
	wait_port "$NS_RECV" 5201
	ip netns exec "$NS_SEND" iperf3 -c "$ADDR_RECV" -p 5201 -u -b 0 -l "$1" -t "$DURATION" -J >"$WORK/iperf3.json"
	# The receiver's count is packets sent minus those it reports lost.
	json_field "$WORK/iperf3.json" \
		"round((d['end']['sum']['packets'] - d['end']['sum']['lost_packets']) / d['end']['sum']['seconds'])"
}

loadgen_run() { # ARGS... -> the JSON report in $WORK/loadgen.json
	ip netns exec "$NS_SEND" "$WORK/loadgen" send -to "$ADDR_RECV:$PORT" -duration "${DURATION}s" \
		-warmup 200ms -json -quiet "$@" >"$WORK/loadgen.json"
}

ip netns exec "$NS_RECV" "$WORK/loadgen" recv -listen "$ADDR_RECV:$PORT" -quiet >"$WORK/recv.log" 2>&1 &
PIDS+=($!)
wait_port "$NS_RECV" "$PORT"

echo "delivered packets/s over a veth between two namespaces, ${DURATION}s per trial"
printf "%8s %14s %16s %7s %16s %7s\n" "payload" "iperf3 -b 0" "loadgen" "ratio" "loadgen -gso" "ratio"
for size in $SIZES; do
	iperf=$(iperf3_pps "$size")
	loadgen_run -rate max -size "$size"
	plain=$(json_field "$WORK/loadgen.json" "round(d['pps_received'])")
	loadgen_run -rate max -size "$size" -gso
	gso=$(json_field "$WORK/loadgen.json" "round(d['pps_received'])")
	printf "%8s %14s %16s %6.2fx %16s %6.2fx\n" "${size}B" "$iperf" "$plain" \
		"$(python3 -c "print($plain/$iperf)")" "$gso" "$(python3 -c "print($gso/$iperf)")"
done

loadgen_run -rate 100000 -size 64
json_field "$WORK/loadgen.json" \
	"'pacing: requested 100000 packets/s, receiver measured %.0f (%+.3f%%), sent %d, lost %d' % (d['pps_received'], (d['pps_received'] - 1e5) / 1e3, d['sent'], d['lost'])"
