import { fileURLToPath } from 'node:url';

// The example lives inside the service-webhooks repository and imports `service-webhooks/next` by
// name: Node's package self-reference resolves that to the built package (../../dist, through the
// root package.json's `exports`), as it would from node_modules. Both roots point at the repository
// so that Turbopack and output tracing may read files outside this folder.
const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/** @type {import('next').NextConfig} */
export default {
  turbopack: { root: repositoryRoot },
  outputFileTracingRoot: repositoryRoot,
};
