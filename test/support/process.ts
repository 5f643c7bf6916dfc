/**
 * Child processes for the tests, one way: start a process, keep what it prints, wait for the line that
 * says it is ready (a port, "Listening on …"), stop it. Receivers, example apps, other runtimes,
 * dynalite and redis-server all start through here.
 *
 * Failures say what the process printed: a server that never became ready fails its test with its
 * own output (or why it could not be started at all), never with a bare timeout.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';

/** What a process (or anything with an stdout and an stderr) printed, and a way to be told of more. */
export interface Output {
  /** Everything printed to stdout so far. */
  output(): string;
  /** stdout and stderr, for failure messages. */
  describe(): string;
  /** Call `listener` on each stdout chunk; returns the unsubscribe. */
  onOutput(listener: () => void): () => void;
}

export interface CapturedOutput extends Output {
  /** Everything printed to stderr so far. */
  stderr(): string;
  /** stdout and stderr together, in the order the chunks arrived. */
  combined(): string;
}

/** Keep what two streams print (either may be absent, as for a process whose stdout is ignored). */
export function captureOutput(stdoutStream: Readable | null, stderrStream: Readable | null): CapturedOutput {
  let stdout = '';
  let stderr = '';
  let combined = '';
  const listeners = new Set<() => void>();
  stdoutStream?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    combined += chunk.toString();
    for (const listener of listeners) listener();
  });
  stderrStream?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    combined += chunk.toString();
  });
  return {
    output: () => stdout,
    stderr: () => stderr,
    combined: () => combined,
    describe: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
    onOutput(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * Resolves with the first match of `pattern` in the stdout printed so far or later; rejects after
 * `timeoutMs`, or once `exited` settles (the process ended without printing it), with the output.
 */
export function waitForLine(
  source: Output,
  pattern: RegExp,
  timeoutMs = 5_000,
  exited?: Promise<unknown>,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (error?: Error, match?: RegExpMatchArray) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      unsubscribe();
      if (error) reject(error);
      else resolve(match!);
    };
    const check = () => {
      const match = source.output().match(pattern);
      if (match) finish(undefined, match);
    };
    const timer = setTimeout(
      () => finish(new Error(`no line matching ${pattern} in ${timeoutMs} ms.\n${source.describe()}`)),
      timeoutMs,
    );
    const unsubscribe = source.onOutput(check);
    void exited?.then((how) => {
      // A last chunk may still be on its way: look once more before calling it a failure.
      check();
      finish(
        new Error(`the process exited (${String(how)}) before printing ${pattern}.\n${source.describe()}`),
      );
    });
    check();
  });
}

export interface SpawnOptions {
  /** Shown in failure messages; the command by default. */
  name?: string;
  cwd?: string;
  /** Added to this process's environment. */
  env?: Record<string, string | undefined>;
  /** `pipe` to write to the process (`child.stdin`). @default 'ignore' */
  stdin?: 'ignore' | 'pipe';
  /** `ignore` for a process whose stdout nobody reads (never for one waited on). @default 'pipe' */
  stdout?: 'ignore' | 'pipe';
}

export interface SpawnedProcess extends CapturedOutput {
  readonly name: string;
  readonly child: ChildProcess;
  /**
   * Resolves (never rejects) once the process has ended: with the signal that ended it, else its exit
   * code; `null` when it could not be started (then `describe()` says why).
   */
  readonly exited: Promise<NodeJS.Signals | number | null>;
  /** Whether the process has ended (or never started). */
  hasExited(): boolean;
  /** {@link waitForLine} on this process's stdout, failing early if the process ends. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Send `signal` (SIGTERM by default) unless it has ended, and wait until it has. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();
// A test worker that dies must not leave servers behind.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Start `command args`, capturing its output. */
export function spawnProcess(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): SpawnedProcess {
  const name = options.name ?? command;
  const child = spawn(command, args, {
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    env: { ...process.env, ...options.env },
    stdio: [options.stdin ?? 'ignore', options.stdout ?? 'pipe', 'pipe'],
  });
  running.add(child);
  const captured = captureOutput(child.stdout, child.stderr);
  let spawnError = '';
  let ended = false;
  // 'close' comes once stdout and stderr are read to their end, so what the process printed last is
  // there when `exited` settles; but a grandchild holding the pipes open would delay it forever.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => {
    child.once('exit', (code, signal) => {
      ended = true;
      running.delete(child);
      const grace = new Promise<void>((done) => setTimeout(done, 500).unref());
      void Promise.race([closed, grace]).then(() => resolve(signal ?? code));
    });
    child.once('error', (error) => {
      // Only a process that could not be started ends here; errors after a start come with 'exit'.
      if (child.pid !== undefined) return;
      ended = true;
      running.delete(child);
      spawnError = `${name} could not be started: ${error.message}\n`;
      resolve(null);
    });
  });
  const describe = () => spawnError + captured.describe();
  const output: Output = { output: captured.output, onOutput: captured.onOutput, describe };
  return {
    ...captured,
    describe,
    name,
    child,
    exited,
    hasExited: () => ended,
    waitFor: (pattern, timeoutMs = 20_000) =>
      waitForLine(output, pattern, timeoutMs, exited).catch((error: Error) => {
        throw new Error(`${name}: ${error.message}`);
      }),
    async stop(signal = 'SIGTERM') {
      if (!ended && child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/**
 * Start `command args` and wait until it prints a line matching `ready` (a server saying where it
 * listens); answers the process and the match. A process that never prints it is stopped, and the
 * error says what it printed.
 */
export async function startProcess(
  command: string,
  args: readonly string[],
  options: SpawnOptions & { ready: RegExp; timeoutMs?: number },
): Promise<SpawnedProcess & { readonly match: RegExpMatchArray }> {
  const started = spawnProcess(command, args, options);
  try {
    const match = await started.waitFor(options.ready, options.timeoutMs ?? 20_000);
    return Object.assign(started, { match });
  } catch (error) {
    await started.stop('SIGKILL');
    throw error;
  }
}
