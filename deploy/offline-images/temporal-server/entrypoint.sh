#!/bin/sh
# As the official image starts the server: it binds to this container's address unless BIND_ON_IP
# says otherwise, and when told to bind to every address it tells the other members this one.
set -eu
own_address=$(getent hosts "$(hostname)" | awk '{ print $1; exit }')
export BIND_ON_IP="${BIND_ON_IP:-$own_address}"
case $BIND_ON_IP in
0.0.0.0 | ::0) export TEMPORAL_BROADCAST_ADDRESS="${TEMPORAL_BROADCAST_ADDRESS:-$own_address}" ;;
*) ;;
esac
exec temporal-server --env docker start "$@"
