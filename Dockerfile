# syntax=docker/dockerfile:1
# One image for every qunli app and tool. The app is chosen by APP (build arg or environment) or by the command:
#   docker run qunli:local scheduler          an app: ingress | scheduler | cognition | outbound | life-director
#   docker run qunli:local tool migrate       a tool: node dist/tools/<name>/main.js
ARG NODE_IMAGE=node:20-bookworm-slim

# --- deps: every dependency, exactly as locked, for the build ---------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# --- build: compile every app, lib and tool into dist/ ----------------------------------------------------------
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY apps ./apps
COPY libs ./libs
COPY tools ./tools
RUN npm run build

# --- prod-deps: runtime dependencies only ------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# --- runtime -----------------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG APP=ingress
ENV APP=${APP} \
    NODE_ENV=production
WORKDIR /app
COPY --from=prod-deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json ./
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node personas ./personas
COPY --chmod=0755 deploy/docker-entrypoint.sh /usr/local/bin/qunli
# The base image's unprivileged user; nothing in the image needs root at run time.
USER node
# INGRESS_PORT, SCHEDULER_PORT, COGNITION_PORT, OUTBOUND_PORT, LIFE_DIRECTOR_PORT (the operating contract).
EXPOSE 8080 8081 8082 8083 8084
ENTRYPOINT ["qunli"]
CMD []
