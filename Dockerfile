# The platform's one image: the three service APIs, the Temporal worker, the migrations and the
# operator CLIs, chosen by the command (see docker-compose.yml and deploy/helm):
#   node dist/db/migrate.js | node dist/api/main.js <ledger|runs|quota> | node dist/worker/main.js
#   node dist/cli/<ledger|runs|quota|platform-metering>.js ...
# It builds unchanged where the official node image is pulled and where it is not (scripts/images
# seed makes a stand-in of the same name from Debian's packages); the suite builds it
# (test/integration/platform/image.test.ts).

# ---- build: the locked dependencies, TypeScript compiled to dist/, then dev dependencies dropped
FROM node:26-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The Temporal SDK's native core comes built for every platform it supports, with its Rust
# sources: this image keeps its own platform's build only (about 120 MB less).
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf test bench coverage .data \
 && bridge=node_modules/@temporalio/core-bridge \
 && find "$bridge/releases" -mindepth 1 -maxdepth 1 ! -name "$(uname -m)-unknown-linux-gnu" -exec rm -rf {} + \
 && rm -rf "$bridge/sdk-core" \
 && test -f "$bridge/releases/$(uname -m)-unknown-linux-gnu/index.node"

# ---- runtime: production node_modules, dist/, and the files read at run time (package.json marks
# the app root and names the version; db/migrations/ holds the SQL migrations). The files belong to
# root, so the processes (the `node` user) cannot change their own code.
FROM node:26-trixie-slim
ARG PLATFORM_VERSION=0.1.0
LABEL org.opencontainers.image.title="platform" \
      org.opencontainers.image.description="ledger, runs and quota services and their Temporal worker" \
      org.opencontainers.image.version="${PLATFORM_VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# A larger young generation: the APIs allocate ~100 KB per request, and with V8's default 16 MB
# semi-space the ledger API collected it ~5 times a second at 1,500 postings/s (bench/ledger.ts:
# 202 scavenges and 1.7 s of pauses per run against 69 and 0.5 s at 64 MB). Same in scripts/start.
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    BIND_HOST=0.0.0.0 \
    RUNS_LOG_DIR=/var/lib/platform/run-logs
WORKDIR /app
COPY --from=build /app /app
# Writable by the processes: run logs, and the metering keys a deployment keeps in a volume here.
RUN mkdir -p /var/lib/platform/run-logs /var/lib/platform/metering \
 && chown node:node /var/lib/platform/run-logs /var/lib/platform/metering
# the worker overrides this with root: it drives the host's Docker engine through its socket
USER node
EXPOSE 8081 8082 8083 9464
# Each process answers its readiness probe on its own port (dist/cli/healthcheck.js says which).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=5 \
  CMD ["node", "dist/cli/healthcheck.js"]
CMD ["node", "dist/api/main.js"]
