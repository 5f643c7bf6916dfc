/** Start and stop receiver processes (test/redis/fixtures/receiver.ts) for the multi-process tests. */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../redis/fixtures/receiver.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ReceiverProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Resolves with the signal or code the process ended with. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
  stop(): Promise<void>;
}

export interface ReceiverEnv {
  SECRET: string;
  COUNTER_KEY: string;
  RECEIVER_NAME?: string;
  STORE_PREFIX?: string;
  REDIS_URL?: string;
  REDIS_CLUSTER_NODES?: string;
  LEASE_SECONDS?: string;
  HANDLER_TIMEOUT_MS?: string;
  STORE_TIMEOUT_MS?: string;
}

export function startReceiver(env: ReceiverEnv): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code)),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    let stdout = '';
    const timer = setTimeout(() => reject(new Error(`receiver did not start in time: ${stderr}`)), 20_000);
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`receiver exited (${String(how)}) before listening: ${stderr}`));
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line) {
        clearTimeout(timer);
        const { port } = JSON.parse(line) as { port: number };
        resolve({
          url: `http://127.0.0.1:${port}/`,
          child,
          exited,
          async stop() {
            if (child.exitCode === null && child.signalCode === null) {
              child.kill('SIGTERM');
              await exited;
            }
          },
        });
      }
    });
  });
}
