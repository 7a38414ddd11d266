# One image for both roles: `api` and `worker` (see docker-compose.yml and deploy/helm).
# The current Node LTS; `engines` still allows >= 20.12 and the suite runs on 20 and 24.
#
# Three stages: `build` compiles the TypeScript (src/, temporal/, scripts/) to JavaScript
# and bundles the workflow code once (scripts/build.ts); `deps` installs the production
# dependencies only; the final stage holds those two results and nothing else: no
# TypeScript, no tsx, no dev dependencies, no npm cache. `npm start` and the tests keep
# running from source; only this image runs dist/.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# `npm install`, not `npm ci`: npm 11's `ci` refuses a lockfile that lists other platforms'
# optional packages it did not write itself; `install` still installs the locked versions.
RUN npm install --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY temporal ./temporal
COPY scripts ./scripts
# `--build-arg WORKFLOW_TRACING=true` puts Temporal's OpenTelemetry workflow interceptors in
# the bundle, for workers that trace (OTEL_EXPORTER_OTLP_ENDPOINT; docs/observability.md).
ARG WORKFLOW_TRACING=false
RUN npx tsx scripts/build.ts --out dist $([ "$WORKFLOW_TRACING" = "true" ] && echo --with-tracing)

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
# The worker loads the bundle built above instead of running webpack at every start.
ENV TEMPORAL_WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY package.json ./
# The code is root's and read-only to the process; it runs as `node` (uid 1000).
USER node
EXPOSE 3000 9464
# GET /healthz on PORT (the API), or else on METRICS_PORT: a worker-only container must set
# METRICS_PORT to be reported healthy (scripts/healthcheck.ts). Kubernetes ignores it; the
# chart has its own probes.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "dist/scripts/healthcheck.js"]
# Node runs as PID 1 (no npm or tsx wrapper) and handles SIGTERM itself: it drains, then exits.
ENTRYPOINT ["node", "dist/src/main.js"]
CMD ["api"]
