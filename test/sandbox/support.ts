/** HTTP helpers shared by the sandbox's tests (and, through test/cli/support.ts, the CLI's). */

/** A JSON API call with a test key. */
export async function api(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  key = 'sk_test_cli',
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : (JSON.parse(text) as unknown),
  };
}

/**
 * Poll `read` until `done` holds, every 25 ms, for up to `timeoutMs` (generous: tests must not depend
 * on how fast the machine is). Answers the last value read.
 */
export async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
