// The simulation's triage knobs: every one on the command line, bad values refused with the usage.
import { DEFAULT_TRIAGE_BUDGET } from '../../examples/global-router/router';
import { main, parseCli } from '../../examples/global-router/sim/main';

describe('sim:multidc triage flags', () => {
  it('defaults to the router default budget, takes each knob, and off is unbounded', () => {
    expect(parseCli([]).setup.triageBudget).toEqual(DEFAULT_TRIAGE_BUDGET);
    expect(parseCli(['--triage-tokens-per-ms', '5.5', '--triage-window-ms', '20000', '--triage-excess', 'kept']).setup.triageBudget).toEqual({ sustainedTokensPerMs: 5.5, windowMs: 20_000, excess: 'kept', use: 'bound' });
    expect(parseCli(['--triage-tokens-per-ms', 'off']).setup.triageBudget).toBeNull();
  });

  it.each([
    [['--triage-tokens-per-ms', '0'], /--triage-tokens-per-ms must be a positive number/],
    [['--triage-excess', 'all'], /cluster or kept/],
    [['--triage-tokens-per-ms', 'off', '--triage-excess', 'kept'], /need a triage budget/],
  ])('exits 2 on %j', async (argv, message) => {
    const err: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => (err.push(chunk), true)) as typeof process.stderr.write;
    try {
      expect(await main(argv)).toBe(2);
    } finally {
      process.stderr.write = write;
    }
    expect(err.join('')).toMatch(message);
    expect(err.join('')).toContain('--triage-excess');
  });
});
