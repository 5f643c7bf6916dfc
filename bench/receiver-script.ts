/**
 * The receiver process's script (server.ts) as plain JavaScript, compiled once per bench run.
 *
 * Run through tsx, every receiver process also carried tsx's module loader on a worker thread: a
 * second V8 isolate whose idle-time collections (its memory reducer, 8-9.5 s after each start) ran on
 * the receivers' pinned core during the first measured slices of every round, lifting their p99 from
 * about 5.5 ms to 10-17 ms in whichever variants ran then. Production receivers have no such thread,
 * so the receivers now run as plain Node.js processes, as they would in an app.
 */
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

const compiled = new Map<string, Promise<string>>();

/**
 * `entry` (a bench script) compiled once per bench run to one plain ESM file named `name.mjs`;
 * packages, the library included, stay imports, so the library is measured as built in dist/,
 * through its package name, as an app imports it.
 */
export function compiledScript(name: string, entry: string): Promise<string> {
  let script = compiled.get(name);
  if (!script) {
    script = (async () => {
      const outDir = here(`./.tmp/${name}-${process.pid}`);
      process.once('exit', () => rmSync(outDir, { recursive: true, force: true }));
      await build({
        config: false,
        entry: { [name]: entry },
        outDir,
        format: ['esm'],
        outExtension: () => ({ js: '.mjs' }),
        platform: 'node',
        target: 'node20',
        tsconfig: here('./tsconfig.json'),
        skipNodeModulesBundle: true,
        external: [/^service-webhooks(\/.*)?$/],
        dts: false,
        sourcemap: false,
        clean: true,
        silent: true,
      });
      return `${outDir}/${name}.mjs`;
    })();
    compiled.set(name, script);
  }
  return script;
}

/** The path of server.ts, the HTTP receivers' script, compiled. */
export function receiverScript(): Promise<string> {
  return compiledScript('server', here('./server.ts'));
}
