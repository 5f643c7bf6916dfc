// Bundled into the bin by the build (esbuild inlines JSON), so the version printed is the one released.
import packageJson from '../../package.json' with { type: 'json' };

/** The package's version, as `service-webhooks --version` prints it. */
export const VERSION: string = packageJson.version;
