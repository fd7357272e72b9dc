#!/bin/sh
# Joins Redis nodes into a cluster, once. Used by the redis-init containers of
# examples/docker-compose.yml.
# Usage: create-cluster.sh REPLICAS HOST:PORT...
set -eu
replicas=$1
shift
first_host=${1%:*}
first_port=${1#*:}
if redis-cli -h "$first_host" -p "$first_port" cluster info | grep -q "^cluster_known_nodes:$#"; then
	echo "cluster already formed"
	exit 0
fi
# CLUSTER MEET needs IP addresses; the nodes still announce their hostnames.
addrs=""
for node in "$@"; do
	ip=$(getent hosts "${node%:*}" | awk '{print $1; exit}')
	[ -n "$ip" ] || { echo "cannot resolve ${node%:*}" >&2; exit 1; }
	addrs="$addrs $ip:${node#*:}"
done
# shellcheck disable=SC2086 # word splitting of the address list is wanted
redis-cli --cluster create $addrs --cluster-replicas "$replicas" --cluster-yes
