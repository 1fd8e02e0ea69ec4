#!/bin/sh
# One-shot step of docker-compose.yml (temporalio/admin-tools image), before the Temporal server
# starts: Temporal's two databases, owned by its role `temporal` (made at the first start of the
# postgres container, deploy/postgres/init-platform.sh), at the schema version this server needs,
# by Temporal's SQL tool and the schemas built into it. Idempotent: a database that exists is kept,
# a schema at its version is left as it is. The password is SQL_PASSWORD, which the tool reads.
set -eu
HOST=${TEMPORAL_DB_HOST:-postgres}
PORT=${TEMPORAL_DB_PORT:-5432}
WAIT=${TEMPORAL_SCHEMA_WAIT_SECONDS:-60}

say() { echo "temporal-schema: $*"; }
sql() { temporal-sql-tool --plugin postgres12 --ep "$HOST" -p "$PORT" -u temporal "$@"; }

# make_database DB: made unless it exists, tried again while PostgreSQL refuses connections
make_database() {
	n=0
	until out=$(sql --db "$1" create-database --defaultdb postgres 2>&1) ||
		printf '%s' "$out" | grep -q 'already exists'; do
		n=$((n + 1))
		if [ "$n" -ge "$WAIT" ]; then
			say "FAILED: could not create database $1 on $HOST:$PORT: $out" >&2
			exit 1
		fi
		sleep 1
	done
}

for pair in temporal:temporal temporal_visibility:visibility; do
	db=${pair%%:*}
	make_database "$db"
	sql --db "$db" setup-schema -v 0.0
	sql --db "$db" update-schema --schema-name "postgresql/v12/${pair#*:}"
	say "database $db ready"
done
