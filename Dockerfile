# One image for both roles: `api` and `worker` (see docker-compose.yml).
# The current Node LTS; `engines` still allows >= 20.10 and the suite runs on 20 and 24.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY temporal ./temporal
COPY scripts ./scripts
USER node
EXPOSE 3000
# tsx's loader runs the TypeScript sources directly, exactly as `npm start` does locally.
# Node itself is PID 1's child here (no tsx CLI wrapper), so SIGTERM reaches our drain.
ENTRYPOINT ["node", "--require", "tsx/cjs", "src/main.ts"]
CMD ["api"]
