/**
 * dynalite for the DynamoDBStore tests. dynalite is an implementation of the DynamoDB API (on LevelDB,
 * in memory here) that runs on this machine: it is not AWS, and no AWS account or network is used.
 * It runs in a child process (fixtures/dynalite-server.cjs: `require('dynalite')({ createTableMs: 0 })`
 * then `.listen(0)`), so the tests' clients reach it over TCP as an application reaches DynamoDB, and
 * its work does not share the test's event loop.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { startProcess } from '../../support/process.js';

const SERVER = fileURLToPath(new URL('./fixtures/dynalite-server.cjs', import.meta.url));

export interface RunningDynalite {
  readonly endpoint: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** Start dynalite on a free port of 127.0.0.1; tables are ACTIVE as soon as they are created. */
export async function startDynalite(): Promise<RunningDynalite> {
  const dynalite = await startProcess(process.execPath, [SERVER], {
    name: 'dynalite',
    ready: /^\{"port":(\d+)\}$/m,
    timeoutMs: 20_000,
  });
  return {
    endpoint: `http://127.0.0.1:${dynalite.match[1]}`,
    child: dynalite.child,
    stop: () => dynalite.stop(),
  };
}

/**
 * What the docs recommend: one attempt, a request timeout well within the core's storeTimeoutMs
 * (2 s) that throws, and sockets for as many concurrent calls as the receiver makes (the SDK's default
 * is 50; a request queued for a socket counts against both timeouts).
 */
export const FAIL_FAST: DynamoDBClientConfig = {
  maxAttempts: 1,
  requestHandler: {
    connectionTimeout: 500,
    requestTimeout: 1_000,
    throwOnRequestTimeout: true,
    httpAgent: { maxSockets: 200 },
  },
};

/** A client for `endpoint` with throwaway credentials (dynalite checks only their shape). */
export function clientFor(endpoint: string, config: DynamoDBClientConfig = FAIL_FAST): DynamoDBClient {
  return new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'dynalite', secretAccessKey: 'dynalite' },
    ...config,
  });
}

/** A table name no other test uses. */
export function uniqueTableName(label: string): string {
  return `webhook-events-${label}-${crypto.randomUUID().slice(0, 8)}`;
}
