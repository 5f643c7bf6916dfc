import { build } from 'esbuild';

/** A store literal a Lambda function brings (it answers as a store would; nothing is remembered). */
export const BROUGHT_STORE =
  "{ claim: async () => 'claimed', complete: async () => 'completed', release: async () => {} }";

/**
 * A one-handler Lambda function importing `createWebhooks` from `from` (the root or the core), with the
 * store given as source text (`undefined`: the default memory store).
 */
export function lambdaFunctionSource(from: string, store: string | undefined): string {
  return `import { createWebhooks } from '${from}';
import { lambdaHandler } from 'service-webhooks/lambda';
const webhooks = createWebhooks({ secret: 'whsec_bundle'${store === undefined ? '' : `, store: ${store}`} });
webhooks.on('user.created', async () => {});
export const handler = lambdaHandler(webhooks);`;
}

/**
 * The files esbuild puts in a bundle of `contents`, as a Lambda deployment bundles it (ESM, minified,
 * node20), resolved from `resolveDir`; paths inside node_modules are given from the package name on.
 */
export async function bundledFiles(
  contents: string,
  resolveDir: string,
  tsconfig?: string,
): Promise<string[]> {
  const result = await build({
    stdin: { contents, resolveDir, loader: 'ts' },
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    metafile: true,
    ...(tsconfig === undefined ? {} : { tsconfig }),
    logLevel: 'error',
  });
  return Object.keys(result.metafile.inputs).map((input) => input.replace(/^.*node_modules\//, ''));
}
