#!/bin/sh
# `redis-server ARGS` as the redis user, listening on every address without protected mode, as the
# official image runs it; any other command as given.
set -eu
if [ "${1:-}" != redis-server ]; then exec "$@"; fi
shift
if [ "$(id -u)" = 0 ]; then
	chown -R redis:redis /data
	exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no "$@"
fi
exec redis-server --protected-mode no "$@"
