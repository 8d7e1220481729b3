#!/usr/bin/env bash
# Installs the Debian packages named as arguments when the commands (or, for a path, the files) they
# provide are missing.
# On a machine without root or apt-get it only reports what is missing.
set -euo pipefail
declare -A provides=([iproute2]=ip [iputils-ping]=ping [iperf3]=iperf3 [python3]=python3 [qemu-user]=qemu-aarch64 [nftables]=nft
	[libipsec-mb-dev]=/usr/include/intel-ipsec-mb.h [wireguard-tools]=wg-quick)
missing=()
for pkg in "$@"; do
	cmd=${provides[$pkg]:-$pkg}
	if [[ $cmd == /* ]]; then
		[ -e "$cmd" ] || missing+=("$pkg")
	else
		command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: missing ${missing[*]}; install them (apt-get install --no-install-recommends ${missing[*]}) as root" >&2
	exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Without recommends: wireguard-tools recommends a kernel image (for the module) and systemd.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
