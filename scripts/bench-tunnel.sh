#!/usr/bin/env bash
# bench-tunnel.sh: our tunnel against wireguard-go on the same two-host topology (two network
# namespaces, one veth, MTU 1500), both brought up the same way, by wg-quick with the implementation
# in WG_QUICK_USERSPACE_IMPLEMENTATION (ours: examples/tunnel; wireguard-go: its own command, built
# from the module golang.zx2c4.com/wireguard at the version go.mod requires), with the same
# configurations and the same load. Rounds alternate ours, theirs, ours, theirs... so that a machine
# that slows down or speeds up during the run affects both alike; the table shows medians over the
# rounds and ratios.
#
# Per round and implementation:
#   - TCP: one iperf3 stream through the tunnel for TCP_SECONDS, Gbit/s received (the target); then
#     four streams, the tunnel's capacity when no single flow's congestion control sets the pace;
#   - UDP 1420: the highest rate of 1392-byte payloads (1420-byte inner packets, the tunnel MTU)
#     delivered with at most 0.1% loss (loadgen sweep -max-loss 0.1, RFC 2544 style);
#   - UDP 64: packets/s delivered at loadgen -rate max with 64-byte payloads, and the loss;
#   - CPU: user+system seconds of both tunnel daemons (/proc/PID/stat) per Gbit of inner payload
#     delivered, for the TCP and the UDP 64 runs.
#
#   make bench-tunnel          (or: sudo scripts/bench-tunnel.sh, from the repository root)
# Environment: ROUNDS (per implementation, default 3), TCP_SECONDS (default 5), UDP_SECONDS
# (per loadgen trial, default 2), IMPLS (default "tunnel wireguard-go": the two compared, first one
# is "ours" in the table), TRIALS (default "tcp tcp4 udp"; the one-stream TCP trial always runs, so
# TRIALS=tcp is the quick iteration on it).
# IMPLS="tunnel tunnel-b" compares our tunnel with another build of it in the same run: round-to-
# round noise on a shared machine is 10-30%, far more than most changes, so a change is judged
# against the default in alternating rounds. TUNNEL_B_BIN is the tunnel binary for tunnel-b (say, of
# the tree before a change: git worktree add /tmp/base HEAD; cd /tmp/base; go build -o
# /tmp/tunnel-base ./examples/tunnel); it must serve wg-quick (tunnel INTERFACE).
# TUNNEL_ENV, TUNNEL_ENV_B and WIREGUARD_GO_ENV are environment assignments (NAME=value ...), or a
# command prefix such as "chrt -b 0", for wg-quick and so for the daemon it starts, e.g.
# TUNNEL_ENV=GOMAXPROCS=1 WIREGUARD_GO_ENV=GOMAXPROCS=1 to compare both with one P each.
#
# Only addresses inside the two namespaces created here receive traffic. Namespaces are named
# wbt-<pid>-<n> like the netns test harness's, whose stale-namespace cleanup also removes ours. The
# UAPI sockets of all namespaces share /var/run/wireguard, so the interfaces are named wbb<pid>a and
# wbb<pid>b. Both configurations set the transmit queue of the interface to 2000 packets (PostUp),
# which our tunnel does by itself, so that neither implementation loses bursts the other's queue
# would hold.
#
# Scheduler autogroups are turned off for the run (kernel.sched_autogroup_enabled, restored on exit):
# wg-quick starts each daemon in a session of its own, and with autogroups CFS shares the two cores
# between sessions, not threads, so each tunnel would be held to one session's share against iperf3
# and loadgen in this script's session. That measures the scheduler's fairness between sessions,
# not the tunnels: with it on, 1392-byte payloads at 120,000 packets/s lost 12-19% in our tunnel's
# TUN queue, with it off 0-2%, as they do for tunnels started in this script's own session.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
TRIALS=${TRIALS:-tcp tcp4 udp}
TCP_SECONDS=${TCP_SECONDS:-5}
UDP_SECONDS=${UDP_SECONDS:-2}
read -r -a IMPLS <<<"${IMPLS:-tunnel wireguard-go}"
NS_A="wbt-$$-1"
NS_B="wbt-$$-2"
IF_A="wbb$$a"
IF_B="wbb$$b"
PORT=51820

. "$(dirname "$0")/lib.sh"

AUTOGROUP=/proc/sys/kernel/sched_autogroup_enabled
if [[ -w $AUTOGROUP ]]; then
	AUTOGROUP_WAS=$(cat "$AUTOGROUP")
	trap 'echo "$AUTOGROUP_WAS" >"$AUTOGROUP"; cleanup' EXIT
	echo 0 >"$AUTOGROUP"
fi

[[ $(id -u) -eq 0 ]] || die "needs root (network namespaces, TUN interfaces): sudo make bench-tunnel"
[[ ${#IMPLS[@]} -eq 2 ]] || die "IMPLS=\"${IMPLS[*]}\": want two of tunnel, tunnel-b, wireguard-go"
for impl in "${IMPLS[@]}"; do
	case $impl in
	tunnel | wireguard-go) ;;
	tunnel-b) [[ -n "${TUNNEL_B_BIN:-}" ]] || die "IMPLS: tunnel-b needs TUNNEL_B_BIN, the other build of the tunnel" ;;
	*) die "IMPLS: unknown $impl (want tunnel, tunnel-b or wireguard-go)" ;;
	esac
done
for old in TUNNEL_FLAGS TUNNEL_FLAGS_B WGPEER_ENV; do
	[[ -z "${!old:-}" ]] || die "$old is gone: wg-quick starts the tunnel with no flags (TUNNEL_ENV, TUNNEL_ENV_B and WIREGUARD_GO_ENV set the environment)"
done
command -v ip >/dev/null || die "needs ip (iproute2)"
command -v wg-quick >/dev/null || die "needs wg-quick (apt-get install --no-install-recommends wireguard-tools)"
command -v python3 >/dev/null || die "needs python3 to read JSON reports"
need_iperf3


echo "bench-tunnel: building" >&2
go build -o "$WORK/tunnel" ./examples/tunnel
go build -o "$WORK/wireguard-go" golang.zx2c4.com/wireguard
[[ -n "${TUNNEL_B_BIN:-}" ]] && cp "$TUNNEL_B_BIN" "$WORK/tunnel-b"
go build -o "$WORK/loadgen" ./loadgen

two_hosts "$NS_A" "$NS_B" wan 10.201.1.1 10.201.1.2

tunnel_configs
# wg-quick names the interface after the configuration file.
for h in A B; do
	iface=IF_$h
	sed 's/^MTU = .*/&\nPostUp = ip link set dev %i txqueuelen 2000/' "$WORK/${h,,}.conf" >"$WORK/${!iface}.conf"
done
chmod 600 "$WORK"/*.conf

# wait_port NS PROTO PORT: until something listens on PORT in namespace NS.
wait_port() {
	for _ in $(seq 200); do
		ip netns exec "$1" ss -Hln"${2:0:1}" "sport = :$3" | grep -q . && return 0
		sleep 0.05
	done
	die "nothing listens on $2 port $3 in $1"
}

# cpu_ticks PID...: user+system clock ticks of the processes so far (fields 14 and 15 of stat,
# counted after the parenthesised command name, which may contain spaces).
cpu_ticks() {
	local total=0 pid stat
	for pid in "$@"; do
		stat=$(cat "/proc/$pid/stat")
		read -r -a f <<<"${stat##*) }"
		total=$((total + f[11] + f[12]))
	done
	echo "$total"
}
TICKS=$(getconf CLK_TCK)

# json FILE EXPR: evaluate a python expression over the JSON object d read from FILE.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

RESULTS="$WORK/results"
: >"$RESULTS"
record() { echo "$1 $2 $3" >>"$RESULTS"; } # IMPL METRIC VALUE

# daemon_pid NS BINARY: the process ID of BINARY in namespace NS (wg-quick started it, detached).
daemon_pid() {
	local pid
	for pid in $(ip netns pids "$1"); do
		[[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$2" ]] && echo "$pid" && return 0
	done
	die "no $2 runs in $1"
}

# running PID: whether the process runs (a zombie has exited; it is not this script's to reap).
running() { [[ -e /proc/$1/stat && $(cut -d' ' -f3 "/proc/$1/stat") != Z ]]; }

# measure IMPL: one round of every measurement with IMPL at both ends.
measure() {
	local impl=$1 envs=()
	case $impl in
	tunnel) read -r -a envs <<<"${TUNNEL_ENV:-}" ;;
	tunnel-b) read -r -a envs <<<"${TUNNEL_ENV_B:-}" ;;
	wireguard-go) read -r -a envs <<<"${WIREGUARD_GO_ENV:-}" ;;
	esac
	local ns iface h pids=()
	for h in A B; do
		ns=NS_$h iface=IF_$h
		ip netns exec "${!ns}" env "${envs[@]}" env WG_QUICK_USERSPACE_IMPLEMENTATION="$WORK/$impl" \
			TUNNEL_LOG="$WORK/${h,,}.log" wg-quick up "$WORK/${!iface}.conf" 2>"$WORK/${h,,}.up" ||
			die "$impl: wg-quick up failed in ${!ns}: $(cat "$WORK/${h,,}.up")"
		pids+=("$(daemon_pid "${!ns}" "$WORK/$impl")")
	done
	local pid_a=${pids[0]} pid_b=${pids[1]}
	ip netns exec "$NS_B" "$WORK/loadgen" recv -listen 10.77.0.2:9000 -quiet >/dev/null 2>&1 &
	local pid_recv=$!
	PIDS+=("$pid_recv")
	wait_port "$NS_B" tcp 9000

	# TCP: one stream (the target). The first connection attempt also completes the handshake.
	measure_tcp "$impl" "$pid_a" "$pid_b" 1 tcp
	if [[ " $TRIALS " == *" tcp4 "* ]]; then
		measure_tcp "$impl" "$pid_a" "$pid_b" 4 tcp4
	fi
	if [[ " $TRIALS " == *" udp "* ]]; then
		measure_udp "$impl" "$pid_a" "$pid_b"
	fi

	kill -INT "$pid_recv"
	wait "$pid_recv" || die "loadgen recv did not exit cleanly"
	PIDS=()
	for h in A B; do
		ns=NS_$h iface=IF_$h
		ip netns exec "${!ns}" wg-quick down "$WORK/${!iface}.conf" 2>/dev/null || die "$impl: wg-quick down failed in ${!ns}"
	done
	# The daemons exit once their interfaces are gone; the next round must not share the CPU with them.
	for _ in $(seq 100); do
		running "$pid_a" || running "$pid_b" || return 0
		sleep 0.05
	done
	die "$impl: the daemons still run 5 s after wg-quick down"
}

# measure_tcp IMPL PID_A PID_B STREAMS METRIC: iperf3 with STREAMS parallel streams through the tunnels
# of IMPL, recorded as METRIC_gbps and METRIC_cpu_per_gbit.
measure_tcp() {
	local impl=$1 pid_a=$2 pid_b=$3 streams=$4 metric=$5 t0 t1 gbit
	ip netns exec "$NS_B" iperf3 -s -1 -B 10.77.0.2 -p 5201 >/dev/null 2>&1 &
	PIDS+=($!)
	wait_port "$NS_B" tcp 5201
	t0=$(cpu_ticks "$pid_a" "$pid_b")
	ip netns exec "$NS_A" iperf3 -c 10.77.0.2 -p 5201 -P "$streams" -t "$TCP_SECONDS" -J >"$WORK/iperf3.json"
	t1=$(cpu_ticks "$pid_a" "$pid_b")
	gbit=$(json "$WORK/iperf3.json" "d['end']['sum_received']['bytes']*8/1e9")
	record "$impl" "${metric}_gbps" "$(json "$WORK/iperf3.json" "d['end']['sum_received']['bits_per_second']/1e9")"
	record "$impl" "${metric}_cpu_per_gbit" "$(python3 -c "print(($t1-$t0)/$TICKS/$gbit)")"
}

# measure_udp IMPL PID_A PID_B: the UDP trials of measure, through the tunnels of IMPL with those processes.
measure_udp() {
	local impl=$1 pid_a=$2 pid_b=$3 t0 t1 gbit
	# UDP 1420-byte inner packets: highest rate with at most 0.1% loss.
	ip netns exec "$NS_A" "$WORK/loadgen" sweep -to 10.77.0.2:9000 -size 1392 -duration "${UDP_SECONDS}s" \
		-warmup 200ms -max-loss 0.1 -resolution 2 -trials 8 -json -quiet >"$WORK/sweep.json"
	local pps
	pps=$(json "$WORK/sweep.json" "d['sweep'][0]['throughput_pps']")
	record "$impl" udp1420_pps "$pps"
	record "$impl" udp1420_gbps "$(python3 -c "print($pps*1392*8/1e9)")"

	# UDP 64-byte payloads as fast as loadgen sends.
	t0=$(cpu_ticks "$pid_a" "$pid_b")
	ip netns exec "$NS_A" "$WORK/loadgen" send -to 10.77.0.2:9000 -rate max -size 64 -duration "${UDP_SECONDS}s" \
		-warmup 200ms -json -quiet >"$WORK/udp64.json"
	t1=$(cpu_ticks "$pid_a" "$pid_b")
	record "$impl" udp64_pps "$(json "$WORK/udp64.json" "d['pps_received']")"
	record "$impl" udp64_loss_pct "$(json "$WORK/udp64.json" "d['lost_percent']")"
	# CPU over warm-up and measured time, payload over the measured time: a slight overestimate,
	# alike for both implementations.
	gbit=$(json "$WORK/udp64.json" "d['received']*64*8/1e9")
	record "$impl" udp64_cpu_per_gbit "$(python3 -c "print(($t1-$t0)/$TICKS/$gbit)")"
}

for round in $(seq "$ROUNDS"); do
	for impl in "${IMPLS[@]}"; do
		echo "bench-tunnel: round $round/$ROUNDS: $impl" >&2
		measure "$impl"
	done
done

python3 - "$RESULTS" "${IMPLS[0]}" "${IMPLS[1]}" "$ROUNDS" <<'EOF'
import statistics, sys
path, ours, theirs, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
vals = {}
for line in open(path):
    impl, metric, value = line.split()
    vals.setdefault((impl, metric), []).append(float(value))
name = {"tunnel": "our tunnel", "tunnel-b": "tunnel B", "wireguard-go": "wireguard-go"}
rows = [
    ("TCP, 1 stream (Gbit/s)", "tcp_gbps", "{:.2f}", ">= 2x"),
    ("TCP, 4 streams (Gbit/s)", "tcp4_gbps", "{:.2f}", ""),
    ("UDP 1420 B, <= 0.1% loss (packets/s)", "udp1420_pps", "{:,.0f}", ">= 2x"),
    ("UDP 1420 B, <= 0.1% loss (Gbit/s)", "udp1420_gbps", "{:.2f}", ""),
    ("UDP 64 B, rate max (packets/s delivered)", "udp64_pps", "{:,.0f}", ">= 2x"),
    ("UDP 64 B, rate max (loss %)", "udp64_loss_pct", "{:.2f}", None),
    ("CPU s per Gbit, TCP (both tunnels)", "tcp_cpu_per_gbit", "{:.3f}", "lower"),
    ("CPU s per Gbit, TCP 4 streams", "tcp4_cpu_per_gbit", "{:.3f}", "lower"),
    ("CPU s per Gbit, UDP 64 B (both tunnels)", "udp64_cpu_per_gbit", "{:.3f}", "lower"),
]
print(f"medians of {rounds} alternating rounds; ratio = {name.get(ours, ours)} / {name.get(theirs, theirs)}")
print(f"{'':44} {name.get(ours, ours):>14} {name.get(theirs, theirs):>14} {'ratio':>7} {'target':>7}")
rows = [r for r in rows if (ours, r[1]) in vals and (theirs, r[1]) in vals]
for label, metric, fmt, target in rows:
    a = statistics.median(vals[(ours, metric)])
    b = statistics.median(vals[(theirs, metric)])
    # A ratio of loss percentages means nothing: those rows show none.
    ratio = f"{a / b:.2f}x" if b and target is not None else "-"
    print(f"{label:44} {fmt.format(a):>14} {fmt.format(b):>14} {ratio:>7} {target or '':>7}")
print("per round (ours; theirs):")
for label, metric, fmt, _ in rows:
    each = lambda impl: " ".join(fmt.format(v) for v in vals[(impl, metric)])
    print(f"  {metric:20} {each(ours)}; {each(theirs)}")
EOF
