# syntax=docker/dockerfile:1
# Payment notification receiver: docker build -t notification-receiver .
# Runs `node dist/main.js` as UID 1000 (the base image's `node` user), on a read-only-friendly
# layout: nothing under /app is writable by that user, only /tmp needs to be.

# Node.js 22, an LTS line (20 reached its end of life in April 2026; the code still runs on it), at an exact
# version and pinned by digest (the multi-arch index of the official image), so that the tag moving to a rebuilt
# image changes nothing here: the same version as scripts/image.sh's stand-in base (NODE_VERSION there), which pins
# this digest too (NODE_IMAGE_DIGEST). A new base is a change to both lines, reviewed.
ARG NODE_IMAGE=node:22.23.3-bookworm-slim@sha256:c3de60bf2f9dd0ac6370e6117950ff62d6e339527e7472301c9c78a017978392

# --- build: full dependency tree, TypeScript compiled to dist/ ---------------------------
# Every step runs as the base's unprivileged user node (UID 1000), npm ci and tsc included. No
# install script runs (--ignore-scripts): compiling needs none (tsc is plain JavaScript). The optional embedded
# Postgres is not needed to compile. npm takes the packages from its cache where it has them (--prefer-offline):
# a cache mount kept between builds, or, in scripts/image.sh's buildah and Podman builds, the packages fetched
# before the build and mounted where npm_config_cache names, so that those builds run with no network at all.
FROM ${NODE_IMAGE} AS build
USER node
WORKDIR /app
ENV npm_config_update_notifier=false
ARG npm_config_cache=/home/node/.npm
# The build's files are its user's: BuildKit makes WORKDIR as USER, buildah when something first goes into it.
COPY --chown=node:node package.json package-lock.json ./
RUN --mount=type=cache,target=/home/node/.npm,uid=1000,gid=1000 npm ci --prefer-offline --ignore-scripts --omit=optional --no-audit --no-fund
COPY --chown=node:node tsconfig.json tsconfig.build.json ./
COPY --chown=node:node src ./src
# tsc's incremental state is no part of what runs.
RUN npm run build && rm dist/.tsbuildinfo

# --- prod-deps: production dependencies only (none of them has install scripts) ----------
# Without the optional embedded Postgres: the image runs with NODE_ENV=production, where it is never started.
FROM ${NODE_IMAGE} AS prod-deps
USER node
WORKDIR /app
ENV npm_config_update_notifier=false
ARG npm_config_cache=/home/node/.npm
COPY --chown=node:node package.json package-lock.json ./
RUN --mount=type=cache,target=/home/node/.npm,uid=1000,gid=1000 npm ci --prefer-offline --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

# --- runtime -------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# No package managers at run time: nothing installs there, and fewer findings for scanners. The one step as root,
# before anything of the application is in the image.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
    /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
    /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-v*
ENV NODE_ENV=production
WORKDIR /app
USER 1000:1000
# Owned by root, whoever wrote them in the stages above: the application cannot change its own code.
COPY package.json ./
COPY --from=prod-deps --chown=0:0 /app/node_modules ./node_modules
COPY --from=build --chown=0:0 /app/dist ./dist
# Migrations are read at run time from <app root>/sql (next to dist/).
COPY sql ./sql
# 8080: public, POST /notifications only. 9090: admin (/metrics, /livez, /readyz, read API).
EXPOSE 8080 9090
# For plain Docker only; Kubernetes ignores HEALTHCHECK and uses the chart's probes.
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ADMIN_PORT || 9090) + '/livez').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, no npm or shell in between: SIGTERM reaches node, which drains and exits. V8's
# allocation-site pretenuring is off (docs/decisions/): NODE_OPTIONS does not take that flag.
CMD ["node", "--no-allocation-site-pretenuring", "dist/main.js"]
