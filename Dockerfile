# syntax=docker/dockerfile:1
# Payment notification receiver: docker build -t notification-receiver .
# Runs `node dist/main.js` as UID 1000 (the base image's `node` user), on a read-only-friendly
# layout: nothing under /app is writable by that user, only /tmp needs to be.

# Node.js 22, an LTS line (20 reached its end of life in April 2026; the code still runs on it), at an exact
# version: the same as scripts/image.sh's stand-in base (NODE_VERSION there), so both builds run the same Node.
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

# --- build: full dependency tree, TypeScript compiled to dist/ ---------------------------
# No install script runs (--ignore-scripts): compiling needs none (tsc is plain JavaScript), and a dependency's
# script would otherwise run here as root with the build's network. The optional embedded Postgres is not needed
# to compile. Were a package ever to need its script, it would be run here by name, on its own line.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --omit=optional --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsc's incremental state is no part of what runs.
RUN npm run build && rm dist/.tsbuildinfo

# --- prod-deps: production dependencies only (none of them has install scripts) ----------
# Without the optional embedded Postgres: the image runs with NODE_ENV=production, where it is never started.
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

# --- runtime -------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# No package managers at run time: nothing installs there, and fewer findings for scanners.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
    /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
    /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-v*
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Migrations are read at run time from <app root>/sql (next to dist/).
COPY sql ./sql
USER 1000:1000
# 8080: public, POST /notifications only. 9090: admin (/metrics, /livez, /readyz, read API).
EXPOSE 8080 9090
# For plain Docker only; Kubernetes ignores HEALTHCHECK and uses the chart's probes.
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ADMIN_PORT || 9090) + '/livez').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, no npm or shell in between: SIGTERM reaches node, which drains and exits. V8's
# allocation-site pretenuring is off (docs/decisions/): NODE_OPTIONS does not take that flag.
CMD ["node", "--no-allocation-site-pretenuring", "dist/main.js"]
