#!/bin/sh
# First start of the postgres container only (docker-entrypoint-initdb.d): the platform's role and
# database, and Temporal's role. The platform's role is not a superuser; it owns its database, so
# it can create the per-service schemas, and it may create roles (CREATEROLE) and databases
# (CREATEDB). Temporal's role may create databases: temporal-schema makes its two.
set -eu
: "${PLATFORM_DB_PASSWORD:?is required}" "${TEMPORAL_DB_PASSWORD:?is required}"
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
	-v u="${PLATFORM_DB_USER:-platform}" \
	-v p="$PLATFORM_DB_PASSWORD" \
	-v d="${PLATFORM_DB_NAME:-platform}" \
	-v tp="$TEMPORAL_DB_PASSWORD" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN CREATEDB CREATEROLE PASSWORD %L', :'u', :'p')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'u') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'d', :'u')
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'d') \gexec
SELECT format('CREATE ROLE temporal LOGIN CREATEDB PASSWORD %L', :'tp')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'temporal') \gexec
SQL
