/**
 * A consumer's project, as a user would make one: an empty folder with the packed package installed
 * from its tarball (and whatever else the test names), never the repository's own node_modules.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './paths.js';

const run = promisify(execFile);

/** `npm pack` the built package into `destination` (lifecycle scripts off); resolves to the tarball's path. */
export async function packPackage(destination: string): Promise<string> {
  const { stdout } = await run(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', destination],
    {
      cwd: ROOT,
    },
  );
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  return join(destination, filename);
}

/**
 * `npm pack` the built package into a new temp folder and install the tarball there, with `also`
 * (package specs) beside it; lifecycle scripts off, the npm cache first. Resolves to the folder.
 */
export async function consumerProject(label: string, also: readonly string[] = []): Promise<string> {
  const project = await mkdtemp(join(tmpdir(), `service-webhooks-${label}-`));
  const tarball = await packPackage(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', tarball, ...also],
    { cwd: project },
  );
  return project;
}
