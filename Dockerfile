# syntax=docker/dockerfile:1
# noderouter's container image: `docker build -t noderouter .`, then see "Run it in
# containers" in the README. Two stages: the build (npm ci with dev dependencies, tsc,
# then the dev and optional dependencies pruned) and the runtime (production
# dependencies, dist/, the dashboard's page and the image's config; no compiler, no npm
# cache), running as the image's non-root user `node`.

FROM node:20-bookworm-slim AS build
# better-sqlite3 is native: without a prebuilt binary for the platform node-gyp compiles it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# A directory holding Node's headers (include/node) for node-gyp, for a build that
# cannot download them (offline, or behind a registry mirror only): mount it at build
# time (`--build-arg NODE_HEADERS_DIR=/opt/node -v /usr/include/node:/opt/node/include/node:ro`).
# Empty: node-gyp downloads them when it has to, as usual.
ARG NODE_HEADERS_DIR=
COPY package.json package-lock.json ./
# npm ci installs this local package (a dev dependency) too.
COPY test/fixtures/noderouter-plugin-fixture/ test/fixtures/noderouter-plugin-fixture/
# --ignore-scripts: the package's own `prepare` (tsc) needs the sources, copied below;
# better-sqlite3's install (its prebuilt binary, or node-gyp) runs by itself after, and
# protobufjs's postinstall only checks versions.
RUN if [ -n "$NODE_HEADERS_DIR" ]; then export npm_config_nodedir="$NODE_HEADERS_DIR"; fi \
 && npm ci --no-audit --no-fund --ignore-scripts \
 && npm rebuild better-sqlite3 \
 && node -e "new (require('better-sqlite3'))(':memory:').close()"
COPY tsconfig.json tsconfig.build.json ./
COPY src/ src/
COPY plugins/ plugins/
RUN npm run build \
 && npm prune --omit=dev --omit=optional --no-audit --no-fund \
 && cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node . \
 && rm -rf build deps src \
 && mkdir -p build/Release \
 && mv better_sqlite3.node build/Release/

FROM node:20-bookworm-slim
ARG VERSION=0.1.0
ARG REVISION=
LABEL org.opencontainers.image.title="noderouter" \
      org.opencontainers.image.description="API-key gateway with quotas, load balancing, failover and Prometheus metrics for pools of blockchain full and archive nodes" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.documentation="README.md#run-it-in-containers"
ENV NODE_ENV=production \
    NODEROUTER_CONFIG=/app/config/container.yaml
WORKDIR /app
COPY --from=build /app/node_modules/ node_modules/
COPY --from=build /app/dist/ dist/
COPY package.json ./
COPY bin/ bin/
COPY src/admin/dashboard/assets/ src/admin/dashboard/assets/
COPY config/container.yaml config/gateway.yaml config/noderouter.schema.json config/
# The record (SQLite, WAL mode) lives in /app/data: a volume, owned by the user it runs as.
RUN ln -s /app/bin/noderouter.js /usr/local/bin/noderouter \
 && mkdir -p /app/data \
 && chown node:node /app/data
VOLUME ["/app/data"]
USER node
# Traffic (HTTP and WebSocket), admin (/metrics, /health/*, /admin/*, the dashboard), gRPC.
EXPOSE 8080 8081 9090
# Readiness turns 503 on SIGTERM, before the drain (docs/shutdown.md); chains=any: one chain
# without nodes does not mark the gateway unhealthy while others serve. Node, no curl in slim.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ADMIN_PORT||8081)+'/health/ready?chains=any').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself: readiness 503, shutdownDelayMs, then the
# drain (workers included) and exit 0. Give the runtime a stop timeout above
# shutdownDelayMs + shutdownTimeoutMs (20 s with the image's config): `docker stop -t 25`.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/bin/noderouter.js"]
CMD ["serve"]
