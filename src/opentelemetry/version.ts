import packageJson from '../../package.json' with { type: 'json' };

/** The package's version: the tracer's and meter's scope version. */
export const VERSION: string = packageJson.version;
