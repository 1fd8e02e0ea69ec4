# syntax=docker/dockerfile:1
# The platform's one image: the three service APIs, the Temporal worker and the migrations,
# chosen by the command (see docker-compose.yml):
#   node dist/db/migrate.js | node dist/api/main.js <ledger|runs|quota> | node dist/worker/main.js

# ---- build: full dependencies, compile TypeScript to dist/, then drop dev dependencies
FROM node:26-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `npm install` rather than `npm ci`: see scripts/lib/node-deps.sh (the lock lacks other
# platforms' optional binaries); it installs exactly the locked versions.
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf test bench coverage .data

# ---- runtime: production node_modules, dist/, and the files read at run time
# (package.json marks the app root; db/migrations/ holds the SQL migrations)
FROM node:26-trixie-slim
# A larger young generation: the APIs allocate ~100 KB per request, and with V8's default 16 MB
# semi-space the ledger API collected it ~5 times a second at 1,500 postings/s (bench/ledger.ts:
# 202 scavenges and 1.7 s of pauses per run against 69 and 0.5 s at 64 MB). Same in scripts/start.
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    BIND_HOST=0.0.0.0 \
    RUNS_LOG_DIR=/var/lib/platform/run-logs
WORKDIR /app
COPY --from=build /app /app
RUN mkdir -p /var/lib/platform/run-logs && chown node:node /var/lib/platform/run-logs
# the worker overrides this with root: it drives the host's Docker engine through its socket
USER node
EXPOSE 8081 8082 8083 9464
CMD ["node", "dist/api/main.js"]
