# lib.sh: what the root scripts (demo.sh, bench-tunnel.sh, bench-loadgen.sh) share. Sourced, not run.
#
# It makes a scratch directory $WORK and arranges that on exit, also after an error or Ctrl-C, the
# background processes in $PIDS are killed, the namespaces made by two_hosts are deleted and $WORK is
# removed. Namespaces are named wbt-<pid>-<n> like the netns test harness's, whose stale-namespace
# cleanup also removes ours after a crash.

# die MESSAGE: print it prefixed with the script's name and exit 1.
die() { echo "${0##*/}: $*" >&2; exit 1; }

# need_iperf3: install iperf3 with apt-get when it is missing.
need_iperf3() {
	command -v iperf3 >/dev/null && return
	echo "${0##*/}: installing iperf3" >&2
	apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null ||
		die "iperf3 is missing and apt-get could not install it"
}

WORK=$(mktemp -d)
PIDS=()
NAMESPACES=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# two_hosts NS_1 NS_2 DEV ADDR_1 ADDR_2: two network namespaces joined by a veth named DEV on both
# sides, with ADDR_1/24 and ADDR_2/24 on it, DEV and lo up.
two_hosts() {
	local ns
	ip netns add "$1" && NAMESPACES+=("$1")
	ip netns add "$2" && NAMESPACES+=("$2")
	ip link add name "$3" netns "$1" type veth peer name "$3" netns "$2"
	ip -n "$1" addr add "$4/24" dev "$3"
	ip -n "$2" addr add "$5/24" dev "$3"
	for ns in "$1" "$2"; do
		ip -n "$ns" link set lo up
		ip -n "$ns" link set "$3" up
	done
}

# tunnel_configs: keys for hosts a and b ($WORK/a.key, a.pub, b.key, b.pub, made by $WORK/tunnel
# genkey and pubkey) and their wg-quick configurations $WORK/a.conf and b.conf: tunnel addresses
# 10.77.0.1 and 10.77.0.2 (MTU 1420), each the other's peer at the address two_hosts gave it
# (10.201.1.1, 10.201.1.2), port $PORT.
tunnel_configs() {
	local h
	for h in a b; do
		(umask 077; "$WORK/tunnel" genkey >"$WORK/$h.key")
		"$WORK/tunnel" pubkey <"$WORK/$h.key" >"$WORK/$h.pub"
	done
	tunnel_config a b 10.77.0.1 10.77.0.2 10.201.1.2 >"$WORK/a.conf"
	tunnel_config b a 10.77.0.2 10.77.0.1 10.201.1.1 >"$WORK/b.conf"
	chmod 600 "$WORK"/*.conf
}

# tunnel_config SELF PEER SELF_INNER PEER_INNER PEER_OUTER: one host's configuration, on stdout.
tunnel_config() {
	cat <<EOF
[Interface]
PrivateKey = $(cat "$WORK/$1.key")
ListenPort = $PORT
Address = $3/24
MTU = 1420

[Peer]
PublicKey = $(cat "$WORK/$2.pub")
AllowedIPs = $4/32
Endpoint = $5:$PORT
EOF
}
