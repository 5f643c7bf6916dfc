/**
 * The data file holds the webhook secret and the JWT signing key, so it is the owner's alone: written
 * 0600 by exclusive create, never read through a symbolic link, refused when another user owns it or
 * may write it; outside a project, `service-webhooks dev` keeps it in a per-user folder of the shared
 * temporary folder. Planting a file owned by another user needs root: these tests chown to `nobody`
 * (uid 65534) to stand for that user, as CI runs as root.
 */
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import { privateTempFolder, UnsafeDataFileError } from '../../src/sandbox/private-files.js';
import { api } from './support.js';

const NOBODY = 65_534;
const PLANTED_KEY = 'a-signing-key-chosen-by-whoever-planted-the-file';
const planted = JSON.stringify({ version: 2, accounts: {}, jwt_signing_key: PLANTED_KEY });

let directory: string;

beforeAll(async () => {
  expect(process.getuid?.(), 'these tests plant files owned by another user: they need root').toBe(0);
  directory = await mkdtemp(join(tmpdir(), 'data-file-safety-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('the data file', () => {
  it('is written 0600, and leaves no temporary file beside it', async () => {
    const dataFile = join(directory, 'fresh.json');
    const sandbox = await startSandbox({ port: 0, dataFile });
    await api(sandbox.url, 'POST', '/users', { name: 'Ada', email: 'ada@example.com' });
    await sandbox.close();
    expect(((await stat(dataFile)).mode & 0o777).toString(8)).toBe('600');
    expect((await readdir(directory)).filter((name) => name.startsWith('fresh.json'))).toEqual([
      'fresh.json',
    ]);
  });

  it('narrows a file of its own that others may read (as every file was written before) to 0600', async () => {
    const dataFile = join(directory, 'older.json');
    await writeFile(dataFile, JSON.stringify({ version: 2, accounts: {} }), { mode: 0o644 });
    await chmod(dataFile, 0o644);
    const sandbox = await startSandbox({ port: 0, dataFile });
    await sandbox.close();
    expect(((await stat(dataFile)).mode & 0o777).toString(8)).toBe('600');
  });

  it('is refused when another user owns it: its secrets were chosen by them', async () => {
    const dataFile = join(directory, 'planted.json');
    await writeFile(dataFile, planted, { mode: 0o600 });
    await chown(dataFile, NOBODY, NOBODY);
    const started = startSandbox({ port: 0, dataFile });
    await expect(started).rejects.toThrow(UnsafeDataFileError);
    await expect(started).rejects.toMatchObject({
      code: 'unsafe_data_file',
      message: expect.stringContaining(`is owned by uid ${NOBODY}, not by you (uid 0)`),
    });
  });

  it('is refused when its group or others may write it', async () => {
    const dataFile = join(directory, 'shared.json');
    await writeFile(dataFile, planted);
    await chmod(dataFile, 0o666);
    await expect(startSandbox({ port: 0, dataFile })).rejects.toThrow(
      /is writable by its group or others \(mode 666\)/,
    );
  });

  it('is never read through a planted symbolic link, nor written through one', async () => {
    const target = join(directory, 'target.json');
    await writeFile(target, planted, { mode: 0o600 });
    const dataFile = join(directory, 'link.json');
    await symlink(target, dataFile);
    await expect(startSandbox({ port: 0, dataFile })).rejects.toThrow(/is a symbolic link/);
    expect(await readFile(target, 'utf8')).toBe(planted);
    expect((await lstat(dataFile)).isSymbolicLink()).toBe(true);
  });
});

describe("service-webhooks dev's folder in the shared temporary folder", () => {
  it('is one per user, made 0700', async () => {
    const base = join(directory, 'tmp-fresh');
    await mkdir(base);
    const folder = await privateTempFolder(base);
    expect(folder).toBe(join(base, 'service-webhooks-0'));
    expect(((await stat(folder)).mode & 0o777).toString(8)).toBe('700');
    expect(await privateTempFolder(base)).toBe(folder);
  });

  it('is refused when another user made it first, when others may write it, or when it is a link', async () => {
    const owned = join(directory, 'tmp-owned');
    await mkdir(join(owned, 'service-webhooks-0'), { recursive: true });
    await chown(join(owned, 'service-webhooks-0'), NOBODY, NOBODY);
    await expect(privateTempFolder(owned)).rejects.toThrow(UnsafeDataFileError);
    await expect(privateTempFolder(owned)).rejects.toThrow(/is owned by uid 65534/);

    const open = join(directory, 'tmp-open');
    await mkdir(join(open, 'service-webhooks-0'), { recursive: true });
    await chmod(join(open, 'service-webhooks-0'), 0o777);
    await expect(privateTempFolder(open)).rejects.toThrow(/is writable by its group or others/);

    const linked = join(directory, 'tmp-linked');
    await mkdir(join(linked, 'elsewhere'), { recursive: true });
    await symlink(join(linked, 'elsewhere'), join(linked, 'service-webhooks-0'));
    await expect(privateTempFolder(linked)).rejects.toThrow(/is a symbolic link/);
  });
});
