/** Polls `condition` until it holds or the deadline passes (then throws with `what`). */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 5_000, intervalMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
