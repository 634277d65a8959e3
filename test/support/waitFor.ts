/**
 * Polls `probe` until it yields a value (anything but undefined or false) and returns it; throws
 * naming `what` once the deadline passes. A probe that throws ends the wait with its error.
 */
export async function waitForValue<T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 5_000,
  intervalMs = 5,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Polls `condition` until it holds or the deadline passes (then throws with `what`). */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000, intervalMs = 5): Promise<void> {
  await waitForValue(condition, what, timeoutMs, intervalMs);
}
