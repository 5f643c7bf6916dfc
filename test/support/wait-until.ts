/**
 * Wait until `check` holds, asking again every `everyMs`; past `timeoutMs`, fail with what was awaited.
 * The tests' one poll: a verdict waits on the state it judges, never on a sleep, and the timeout is a
 * hang's bound, not a speed (a loaded CI machine may take many times an idle one's time).
 *
 * @example
 * ```ts
 * await waitUntil('the dead letter', async () => (await admin.stats()).deadLettered === 1);
 * ```
 */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
