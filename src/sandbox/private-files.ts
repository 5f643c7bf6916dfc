/**
 * The data file holds the webhook secret and the JWT signing key: whoever can read it can sign events
 * the receiver accepts and mint tokens, and whoever can write it (or plant it first) chooses them. So
 * it is created readable by its owner only, opened without following a link, and refused when someone
 * else owns it or may write to it; the folder it goes to in the shared temporary folder is one per
 * user. On systems without POSIX owners (Windows), only the link rule applies.
 *
 * @packageDocumentation
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { DataFileError } from './data-file.js';

/**
 * A data file, or the folder it is kept in, that another user could have planted or may change: a
 * symbolic link, something owned by someone else, or writable by the group or others.
 *
 * @example
 * ```ts
 * try {
 *   await startSandbox({ dataFile: '/tmp/shared/sandbox.json' });
 * } catch (error) {
 *   if (error instanceof UnsafeDataFileError) console.error(error.code, error.message);
 *   else throw error;
 * }
 * ```
 */
export class UnsafeDataFileError extends DataFileError {
  override name = 'UnsafeDataFileError';
  readonly code = 'unsafe_data_file';
}

/** Owner read and write, nothing for anyone else. */
export const PRIVATE_FILE_MODE = 0o600;
/** Owner only. */
export const PRIVATE_FOLDER_MODE = 0o700;
const WRITABLE_BY_OTHERS = 0o022;
const READABLE_BY_OTHERS = 0o044;

// `O_NOFOLLOW` is POSIX; where it does not exist (Windows), links are checked with lstat instead.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

function currentUid(): number | undefined {
  return process.getuid?.();
}

function ownershipProblem(stats: Stats, uid: number | undefined): string | undefined {
  if (uid === undefined) return undefined;
  if (stats.uid !== uid) return `is owned by uid ${stats.uid}, not by you (uid ${uid})`;
  if ((stats.mode & WRITABLE_BY_OTHERS) !== 0) {
    return `is writable by its group or others (mode ${(stats.mode & 0o777).toString(8)})`;
  }
  return undefined;
}

/**
 * Open an existing data file to read it, refusing a symbolic link (even to a file of your own: the
 * link can be swapped), anything but a regular file, a file owned by another user and one others may
 * write. A file others may read is narrowed to {@link PRIVATE_FILE_MODE}: every file written before
 * this rule was (the umask's 0644), and it is rewritten 0600 at the next save anyway.
 *
 * @returns the open handle, or `undefined` when the file does not exist.
 * @throws {@link UnsafeDataFileError}
 */
export async function openPrivateFile(file: string): Promise<FileHandle | undefined> {
  let handle: FileHandle;
  try {
    if (NO_FOLLOW === 0 && (await lstat(file)).isSymbolicLink())
      throw Object.assign(new Error(), { code: 'ELOOP' });
    handle = await open(file, constants.O_RDONLY | NO_FOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') {
      throw new UnsafeDataFileError(
        `${file} is a symbolic link: a data file is never read through one, since whoever can replace the link chooses the secrets; pass the file it points to with --data.`,
      );
    }
    throw error;
  }
  try {
    const stats = await handle.stat();
    // A folder is the caller's to explain (it reads it and gets EISDIR): no secret is at stake.
    if (stats.isDirectory()) return handle;
    if (!stats.isFile()) throw new UnsafeDataFileError(`${file} is not a regular file.`);
    const problem = ownershipProblem(stats, currentUid());
    if (problem !== undefined) {
      throw new UnsafeDataFileError(
        `${file} ${problem}: its webhook secret and signing key may have been chosen by someone else. Remove it (or chown/chmod 600 it if it is yours) and start again.`,
      );
    }
    if (currentUid() !== undefined && (stats.mode & READABLE_BY_OTHERS) !== 0) {
      await handle.chmod(PRIVATE_FILE_MODE);
    }
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * Create `file` for writing, owner-only and exclusively: a name someone planted first (a file, or a
 * link to one of yours) makes it fail instead of writing there.
 *
 * @throws the `EEXIST` error when the name is taken.
 */
export function createPrivateFile(file: string): Promise<FileHandle> {
  return open(file, 'wx', PRIVATE_FILE_MODE);
}

/** A name for a sibling of `file` to write and rename over it, which no one can guess ahead. */
export function temporarySibling(file: string): string {
  return `${file}.${randomBytes(8).toString('hex')}.tmp`;
}

/**
 * This user's own folder in the system's temporary folder (`<tmp>/service-webhooks-<uid>`), made
 * {@link PRIVATE_FOLDER_MODE} when missing. An existing one must be a real folder (not a link) owned
 * by this user that the group and others cannot write, since the temporary folder is shared and its
 * names are predictable: another user could otherwise make it first and plant the data file.
 *
 * @example
 * ```ts
 * const folder = await privateTempFolder();
 * // /tmp/service-webhooks-1000
 * ```
 * @throws {@link UnsafeDataFileError}
 */
export async function privateTempFolder(base: string = tmpdir()): Promise<string> {
  const folder = privateTempFolderPath(base);
  try {
    await mkdir(folder, { mode: PRIVATE_FOLDER_MODE });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stats = await lstat(folder);
  const problem = stats.isSymbolicLink()
    ? 'is a symbolic link'
    : !stats.isDirectory()
      ? 'is not a folder'
      : ownershipProblem(stats, currentUid());
  if (problem !== undefined) {
    throw new UnsafeDataFileError(
      `${folder} ${problem}: someone else may have made it to plant the data file there. Remove it, or pass --data with a file of your own.`,
    );
  }
  return folder;
}

/** The folder {@link privateTempFolder} answers, without making or checking it. */
export function privateTempFolderPath(base: string = tmpdir()): string {
  return join(base, `service-webhooks-${currentUid() ?? userInfo().username}`);
}
