# One image serves both connectors; the command picks one: `outbound` (default) or `inbound`.
# Build stage: dev dependencies (TypeScript) to compile src/ alone into dist/src, and the operator
# page's scripts into dist/ui (no bench, chaos, tests or demo: an edit there does not rebuild the image).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json tsconfig.ui.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npx tsc -p tsconfig.ui.json

# Run stage: production dependencies and dist/src only, non-root, node started directly so signals
# arrive. The connector records where it listens in Http:AddressFile; the healthcheck reads it, so it
# probes the connector's real address whatever its hostUrls say (e.g. an inbound on :8081).
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    Http__AddressFile=/tmp/rest-connector.address
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/ui ./dist/ui
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "dist/src/healthcheck.js"]
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["outbound"]
