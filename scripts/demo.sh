#!/usr/bin/env bash
# demo.sh: two hosts in network namespaces joined by a veth, our WireGuard-compatible tunnel at both
# ends, loadgen through the tunnel, then loadgen's report and both tunnels' counters.
#
#   make demo                      (or: sudo scripts/demo.sh, from the repository root)
#   DEMO_BENCH=1 make demo         also runs a short round of scripts/bench-tunnel.sh (ours against
#                                  wireguard-go) and prints its table
#   TUNNEL_IMPL=wgpeer make demo   wireguard-go (netns-tests/cmd/wgpeer) at both ends instead
# Environment: DURATION (seconds of traffic, default 3), RATE (packets/s, default 20000),
# SIZE (loadgen -size, default imix).
#
# Only addresses inside the two namespaces created here receive traffic: 10.201.1.0/24 on the veth,
# 10.77.0.0/24 inside the tunnel. Namespaces are named wbt-<pid>-<n> like the netns test harness's,
# whose stale-namespace cleanup also removes ours after a crash. Everything is removed on exit.
set -euo pipefail

TUNNEL_IMPL=${TUNNEL_IMPL:-tunnel}
DURATION=${DURATION:-3}
RATE=${RATE:-20000}
SIZE=${SIZE:-imix}
NS_A="wbt-$$-1"
NS_B="wbt-$$-2"
PORT=51820

. "$(dirname "$0")/lib.sh"

if [[ $(id -u) -ne 0 ]]; then
	die "needs root: it creates network namespaces and TUN interfaces (run: sudo make demo)"
fi
command -v ip >/dev/null || die "needs ip (iproute2; apt-get install iproute2)"
case $TUNNEL_IMPL in
tunnel) PKG=./examples/tunnel ;;
wgpeer) PKG=./netns-tests/cmd/wgpeer ;;
*) die "TUNNEL_IMPL=$TUNNEL_IMPL: want tunnel or wgpeer" ;;
esac


echo "== building ./examples/tunnel, $([[ $PKG == ./examples/tunnel ]] || echo "$PKG, ")./loadgen"
go build -o "$WORK/tunnel" ./examples/tunnel
if [[ $PKG == ./examples/tunnel ]]; then
	cp "$WORK/tunnel" "$WORK/impl"
else
	go build -o "$WORK/impl" "$PKG"
fi
go build -o "$WORK/loadgen" ./loadgen

echo "== two hosts: $NS_A (10.201.1.1) and $NS_B (10.201.1.2), one veth"
two_hosts "$NS_A" "$NS_B" wan 10.201.1.1 10.201.1.2
for ns in "$NS_A" "$NS_B"; do
	# No IPv6 on the tunnel interfaces: the kernel's router solicitations and MLD reports would
	# otherwise show up as no_route drops (no peer's AllowedIPs cover them).
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done

echo "== keys: tunnel genkey | tunnel pubkey"
tunnel_configs
for h in a b; do
	echo "  host ${h^^} public key $(cat "$WORK/$h.pub")"
done
echo "  host A's configuration (private key elided):"
sed 's/^PrivateKey = .*/PrivateKey = (elided)/; s/^/    /' "$WORK/a.conf"

echo "== $TUNNEL_IMPL at both ends (interface wb0: A 10.77.0.1, B 10.77.0.2)"
ip netns exec "$NS_A" "$WORK/impl" -config "$WORK/a.conf" -iface wb0 >"$WORK/a.out" 2>"$WORK/a.err" &
PID_A=$!
PIDS+=("$PID_A")
ip netns exec "$NS_B" "$WORK/impl" -config "$WORK/b.conf" -iface wb0 >"$WORK/b.out" 2>"$WORK/b.err" &
PID_B=$!
PIDS+=("$PID_B")
for ns in "$NS_A" "$NS_B"; do
	for _ in $(seq 100); do
		ip -n "$ns" -br addr show dev wb0 2>/dev/null | grep -q "10.77.0" && continue 2
		sleep 0.05
	done
	cat "$WORK"/*.err >&2
	die "wb0 did not come up in $ns"
done

ip netns exec "$NS_B" "$WORK/loadgen" recv -listen 10.77.0.2:9000 -quiet >"$WORK/recv.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
	ip netns exec "$NS_B" ss -Htln "sport = :9000" | grep -q . && break
	sleep 0.05
done

echo "== loadgen from A to B through the tunnel: $RATE packets/s, size $SIZE, ${DURATION}s"
# The first packet starts the handshake; loadgen's control connection rides through the tunnel.
ip netns exec "$NS_A" "$WORK/loadgen" send -to 10.77.0.2:9000 -rate "$RATE" -size "$SIZE" \
	-duration "${DURATION}s" -warmup 500ms -quiet

echo "== tunnel counters on exit"
for h in A B; do
	pid=PID_$h
	kill -INT "${!pid}"
	status=0
	wait "${!pid}" || status=$?
	out="$WORK/${h,,}.out"
	if [[ $status -ne 0 ]]; then
		cat "$WORK/${h,,}.err" >&2
		die "$TUNNEL_IMPL on host $h exited with status $status"
	fi
	if [[ -s $out ]]; then
		echo "  host $h: $(tail -n 1 "$out")"
	else
		echo "  host $h: ($TUNNEL_IMPL prints no counters)"
	fi
done

if [[ ${DEMO_BENCH:-0} == 1 ]]; then
	echo "== benchmark: our tunnel against wireguard-go (scripts/bench-tunnel.sh, one round)"
	ROUNDS=${ROUNDS:-1} scripts/bench-tunnel.sh
fi
