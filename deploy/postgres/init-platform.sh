#!/bin/sh
# First start of the postgres container only (docker-entrypoint-initdb.d): the platform's
# role and database. The role is not a superuser; it owns its database, so it can create
# the per-service schemas, and it may create roles (CREATEROLE) and databases (CREATEDB).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
	-v u="${PLATFORM_DB_USER:-platform}" \
	-v p="${PLATFORM_DB_PASSWORD:-platform}" \
	-v d="${PLATFORM_DB_NAME:-platform}" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN CREATEDB CREATEROLE PASSWORD %L', :'u', :'p')
 WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'u') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'d', :'u')
 WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'d') \gexec
SQL
