#!/bin/sh
# The official postgres image's contract, as far as docker-compose.yml uses it: on an empty PGDATA,
# a cluster whose superuser is POSTGRES_USER (default postgres) with POSTGRES_PASSWORD (required),
# password logins over TCP from anywhere (scram-sha-256), the scripts of /docker-entrypoint-initdb.d
# run once (*.sh executed or sourced, *.sql through psql); then `postgres ARGS` listening on every
# address, as the postgres user.
set -eu
if [ "${1:-}" != postgres ]; then exec "$@"; fi

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA"
	chown -R postgres:postgres "$PGDATA"
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	: "${POSTGRES_PASSWORD:?is required: the superuser password of the new cluster}"
	export POSTGRES_USER="${POSTGRES_USER:-postgres}"
	password_file=$(mktemp)
	printf '%s' "$POSTGRES_PASSWORD" >"$password_file"
	initdb --username="$POSTGRES_USER" --pwfile="$password_file" --auth-local=trust \
		--auth-host=scram-sha-256 -D "$PGDATA"
	rm -f "$password_file"
	echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
	# the init scripts talk over the socket only: nobody reaches a half-made cluster
	pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
	for script in /docker-entrypoint-initdb.d/*; do
		case $script in
		*.sh) if [ -x "$script" ]; then "$script"; else . "$script"; fi ;;
		*.sql) psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -f "$script" ;;
		*) ;;
		esac
	done
	pg_ctl -D "$PGDATA" -m fast -w stop
fi
shift
exec postgres -c listen_addresses='*' "$@"
