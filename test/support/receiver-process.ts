/** Start and stop receiver processes (test/stores/redis/fixtures/receiver.ts) for the multi-process tests. */
import type { ChildProcess } from 'node:child_process';
import { ROOT, repoPath } from './paths.js';
import { startProcess } from './process.js';

const SCRIPT = repoPath('test', 'stores', 'redis', 'fixtures', 'receiver.ts');

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

/** The receiver prints `{"port":N}` as its first line once it listens. */
export async function startReceiver(env: ReceiverEnv): Promise<ReceiverProcess> {
  const receiver = await startProcess(process.execPath, ['--import', 'tsx', SCRIPT], {
    name: `receiver ${env.RECEIVER_NAME ?? ''}`.trim(),
    cwd: ROOT,
    env: { ...env },
    ready: /^\{"port":(\d+)\}$/m,
    timeoutMs: 20_000,
  });
  return {
    url: `http://127.0.0.1:${receiver.match[1]}/`,
    child: receiver.child,
    exited: receiver.exited,
    stop: () => receiver.stop(),
  };
}
