# syntax=docker/dockerfile:1
#
# Portaria container image: Node.js 24 (LTS), production dependencies only, non-root,
# read-only-root friendly.
#
#   docker build -t portaria:0.1.0 .
#   docker run --read-only -v portaria-data:/data -v "$PWD/etc:/etc/portaria:ro" \
#     -p 8080:8080 -p 127.0.0.1:9091:9091 portaria:0.1.0
#
# /etc/portaria/portaria.yaml is the default configuration (override the CMD with
# `--config FILE` or set PORTARIA_CONFIG). The gateway writes only to the data directory
# (revocation.file and revocation.queueFile: point them at /data); keys, clients and the
# admin token are read from files. Set admin.host: 0.0.0.0 so health probes and
# Prometheus reach the admin port, and never publish that port.

# --- build: the TypeScript compiler and every dev dependency, on the full image -----------
FROM node:24-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- deps: production dependencies only, on the runtime's base --------------------------
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# A fixed non-root uid/gid (10001), so Kubernetes' runAsNonRoot can check it; /data is the
# only directory it owns.
RUN groupadd --system --gid 10001 portaria \
  && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
     --shell /usr/sbin/nologin portaria \
  && mkdir -p /data /etc/portaria \
  && chown 10001:10001 /data \
  && chmod 0700 /data
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# package.json: "type": "module" makes Node load dist/ as ES modules.
COPY package.json ./
USER 10001:10001
# Public listener and admin listener (server.port, admin.port); the decision listeners
# of mode authorizer or both (authorizer.port, authorizer.grpc.port).
EXPOSE 8080 9091 8181 9191
# SIGTERM starts the drain: readiness 503, in-flight requests finish, exit 0.
STOPSIGNAL SIGTERM
# Exec form: node is PID 1 and receives SIGTERM itself (no shell in between).
# --max-semi-space-size=8: V8's young generation stays at 2 × 8 MiB instead of growing to
# 2 × 16 MiB under load (-21 MB of RSS with 100,000 cached tokens, no measurable CPU
# cost: docs/performance.md). Workers inherit it.
ENTRYPOINT ["node", "--max-semi-space-size=8", "dist/main.js"]
CMD ["--config", "/etc/portaria/portaria.yaml"]
