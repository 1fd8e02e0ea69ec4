#!/bin/sh
# The Temporal set-up of a deployment, on the temporalio/admin-tools image: the Helm chart's hook
# Job and docker-compose.yml's temporal-setup step both run this file (it lives in the chart, which
# can carry only its own files). Waits for the Temporal frontend, makes sure the namespace exists,
# and registers every search attribute listed in scripts/search-attributes.txt (one Name=Type per
# line) that is missing. Idempotent.
set -eu
ADDR=${TEMPORAL_ADDRESS:-temporal:7233}
NS=${TEMPORAL_NAMESPACE:-default}
FILE=${SEARCH_ATTRIBUTES_FILE:-/etc/platform/search-attributes.txt}
RETENTION=${TEMPORAL_NAMESPACE_RETENTION:-72h}
WAIT=${TEMPORAL_SETUP_WAIT_SECONDS:-180}

say() { echo "temporal-setup: $*"; }

# retry <what> <command...>: up to $WAIT seconds, one try per second
retry() {
	what=$1
	shift
	n=0
	until "$@"; do
		n=$((n + 1))
		if [ "$n" -ge "$WAIT" ]; then
			say "FAILED: $what (gave up after ${WAIT}s)" >&2
			exit 1
		fi
		sleep 1
	done
}

healthy() { temporal operator cluster health --address "$ADDR" 2>/dev/null | grep -q SERVING; }
ns_exists() { temporal operator namespace describe --address "$ADDR" --namespace "$NS" >/dev/null 2>&1; }

retry "the Temporal frontend at $ADDR answering SERVING" healthy
if ! ns_exists; then
	say "creating namespace $NS (retention $RETENTION)"
	temporal operator namespace create --address "$ADDR" --namespace "$NS" --retention "$RETENTION" ||
		true # a concurrent creator may have won; ns_exists decides
	retry "namespace $NS to exist" ns_exists
fi

[ -r "$FILE" ] || {
	say "FAILED: $FILE is missing (mount scripts/search-attributes.txt there)" >&2
	exit 1
}
# a new namespace reaches the operator service's cache a few seconds after it exists
list_sa() { existing=$(temporal operator search-attribute list --address "$ADDR" --namespace "$NS" 2>/dev/null); }
existing=''
retry "listing the search attributes of namespace $NS" list_sa
# strip comments and blanks; every line is Name=Type
sed -e 's/#.*//' -e 's/[[:space:]]//g' "$FILE" | grep -v '^$' | while IFS= read -r line; do
	name=${line%%=*}
	type=${line#*=}
	if [ -z "$name" ] || [ "$name" = "$line" ]; then
		say "FAILED: bad line '$line' in $FILE (want Name=Type)" >&2
		exit 1
	fi
	have=$(printf '%s\n' "$existing" | awk -v n="$name" '$1 == n { print $2 }')
	if [ -z "$have" ]; then
		say "adding search attribute $name ($type) to namespace $NS"
		retry "creating search attribute $name" temporal operator search-attribute create \
			--address "$ADDR" --namespace "$NS" --name "$name" --type "$type"
	elif [ "$have" != "$type" ]; then
		say "FAILED: search attribute $name exists as $have, but $FILE says $type" >&2
		exit 1
	fi
done
say "namespace $NS ready with the search attributes of $FILE"
