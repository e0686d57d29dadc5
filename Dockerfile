# Support Workspace: build stage (TypeScript → dist/), then a slim runtime with no dev dependencies.
# docker build -t support-workspace . && docker run -p 8080:8080 -v sw-data:/data support-workspace
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm ci --no-audit --no-fund
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app/dist ./dist
COPY package.json LICENSE ./
# The data dir belongs to the image's unprivileged `node` user and nobody else may write it (the server refuses
# a group- or world-writable data dir).
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
USER node
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains in-flight requests and exits 0 (docs/configuration.md#starting-and-stopping).
STOPSIGNAL SIGTERM
CMD ["node", "dist/server.js"]
