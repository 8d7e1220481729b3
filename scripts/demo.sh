#!/usr/bin/env bash
# demo.sh: two hosts in network namespaces joined by a veth, brought up by wg-quick with our
# WireGuard-compatible tunnel as its userspace implementation at both ends
# (WG_QUICK_USERSPACE_IMPLEMENTATION), loadgen through the tunnel, then loadgen's report and wg
# show's account of both ends.
#
#   make demo                            (or: sudo scripts/demo.sh, from the repository root)
#   DEMO_BENCH=1 make demo               also runs a short round of scripts/bench-tunnel.sh (ours
#                                        against wireguard-go) and prints its table
#   TUNNEL_IMPL=wireguard-go make demo   wireguard-go (its own command, at the version go.mod
#                                        requires) at both ends instead
# Environment: DURATION (seconds of traffic, default 3), RATE (packets/s, default 20000),
# SIZE (loadgen -size, default imix).
#
# Only addresses inside the two namespaces created here receive traffic: 10.201.1.0/24 on the veth,
# 10.77.0.0/24 inside the tunnel. Namespaces are named wbt-<pid>-<n> like the netns test harness's,
# whose stale-namespace cleanup also removes ours after a crash. The UAPI sockets of all namespaces
# share /var/run/wireguard, so the two interfaces are named wbd<pid>a and wbd<pid>b. Everything is
# removed on exit: deleting a namespace deletes its interface, and the daemon exits with it.
set -euo pipefail

TUNNEL_IMPL=${TUNNEL_IMPL:-tunnel}
DURATION=${DURATION:-3}
RATE=${RATE:-20000}
SIZE=${SIZE:-imix}
NS_A="wbt-$$-1"
NS_B="wbt-$$-2"
IF_A="wbd$$a"
IF_B="wbd$$b"
PORT=51820

. "$(dirname "$0")/lib.sh"

if [[ $(id -u) -ne 0 ]]; then
	die "needs root: it creates network namespaces and TUN interfaces (run: sudo make demo)"
fi
command -v ip >/dev/null || die "needs ip (iproute2; apt-get install iproute2)"
command -v wg-quick >/dev/null || die "needs wg-quick (apt-get install --no-install-recommends wireguard-tools)"
case $TUNNEL_IMPL in
tunnel) PKG=./examples/tunnel ;;
wireguard-go) PKG=golang.zx2c4.com/wireguard ;;
*) die "TUNNEL_IMPL=$TUNNEL_IMPL: want tunnel or wireguard-go" ;;
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
	# otherwise go into the tunnel, which no peer's AllowedIPs cover.
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
done

echo "== keys: tunnel genkey | tunnel pubkey"
tunnel_configs
# wg-quick names the interface after the configuration file.
mv "$WORK/a.conf" "$WORK/$IF_A.conf"
mv "$WORK/b.conf" "$WORK/$IF_B.conf"
for h in a b; do
	echo "  host ${h^^} public key $(cat "$WORK/$h.pub")"
done
echo "  host A's configuration (private key elided):"
sed 's/^PrivateKey = .*/PrivateKey = (elided)/; s/^/    /' "$WORK/$IF_A.conf"

echo "== wg-quick up with WG_QUICK_USERSPACE_IMPLEMENTATION=$TUNNEL_IMPL (A: $IF_A 10.77.0.1, B: $IF_B 10.77.0.2)"
for h in A B; do
	ns=NS_$h iface=IF_$h
	# Our daemon appends its log to TUNNEL_LOG (wireguard-go logs nowhere in the background).
	if ! ip netns exec "${!ns}" env WG_QUICK_USERSPACE_IMPLEMENTATION="$WORK/impl" TUNNEL_LOG="$WORK/${h,,}.log" \
		wg-quick up "$WORK/${!iface}.conf" 2>"$WORK/${h,,}.up"; then
		cat "$WORK/${h,,}.up" "$WORK/${h,,}.log" >&2 2>/dev/null || true
		die "wg-quick up failed on host $h"
	fi
done
echo "  what wg-quick did on host A:"
sed -n 's/^\[#\] /    /p' "$WORK/a.up"

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

echo "== wg show on both hosts"
for h in A B; do
	ns=NS_$h iface=IF_$h
	echo "  host $h:"
	ip netns exec "${!ns}" wg show "${!iface}" | sed 's/^/    /'
done

echo "== wg-quick down"
for h in A B; do
	ns=NS_$h iface=IF_$h
	ip netns exec "${!ns}" wg-quick down "$WORK/${!iface}.conf" 2>/dev/null
	# The daemon exits when its interface is deleted, removing its socket.
	for _ in $(seq 100); do
		[[ -e /var/run/wireguard/${!iface}.sock ]] || continue 2
		sleep 0.05
	done
	die "$TUNNEL_IMPL on host $h did not remove /var/run/wireguard/${!iface}.sock after wg-quick down"
done
echo "  both interfaces and sockets are gone"

if [[ ${DEMO_BENCH:-0} == 1 ]]; then
	echo "== benchmark: our tunnel against wireguard-go (scripts/bench-tunnel.sh, one round)"
	ROUNDS=${ROUNDS:-1} scripts/bench-tunnel.sh
fi
