// Turns each round's findings into log lines, rate-limited: a finding is said once when it begins,
// again at most every `repeatMs` while it holds, and once more (at info) when it ends. In one round
// at most `maxPerRound` lines of a kind are said; the rest become one summary line, so 500 engines
// down at once are 11 lines, not 500 (the status view lists every one).
import type { CheckName, Finding, FindingFields } from './checks';

export interface Line {
  level: 'warn' | 'info';
  msg: string;
  fields: FindingFields & { check: CheckName };
}

/** What each kind of finding says when it begins and when it ends. */
export const CHECK_MESSAGES: Record<CheckName, { begins: string; ends: string; many: string }> = {
  source_not_connected: { begins: 'KV source not connected', ends: 'KV source connected', many: 'more KV sources not connected' },
  block_size_mismatch: {
    begins: "KV events dropped: the engine's block size is not the pool's kvBlockSize",
    ends: 'KV events no longer dropped for their block size',
    many: 'more KV sources whose block size is not their pool\'s',
  },
  pool_empty_while_publishing: { begins: 'pool stays empty while its engines publish', ends: 'pool holds blocks', many: 'more pools empty while their engines publish' },
};

const NO_LINES: readonly Line[] = [];

interface Said {
  finding: Finding;
  atMs: number;
}

export class Speaker {
  private readonly said = new Map<string, Said>();

  constructor(
    private readonly repeatMs: number,
    private readonly maxPerRound: number,
  ) {}

  /**
   * This round's lines. A finding whose subject is no longer `present` (a source or pool the config
   * took away) ends without a line: it was not resolved, it went.
   */
  round(findings: readonly Finding[], now: number, present: Pick<ReadonlySet<string>, 'has'>): readonly Line[] {
    // A quiet relay's round: nothing to say, nothing made.
    if (findings.length === 0 && this.said.size === 0) return NO_LINES;
    const holding = new Set<string>();
    const begins: Finding[] = [];
    const repeats: Finding[] = [];
    for (const f of findings) {
      const key = `${f.check}|${f.subject}`;
      holding.add(key);
      const said = this.said.get(key);
      if (said && now - said.atMs < this.repeatMs) continue;
      (said ? repeats : begins).push(f);
      this.said.set(key, { finding: f, atMs: now });
    }
    const ended: Finding[] = [];
    for (const [key, said] of this.said) {
      if (holding.has(key)) continue;
      this.said.delete(key);
      if (present.has(said.finding.subject)) ended.push(said.finding);
    }
    return [...this.lines('warn', begins, false), ...this.lines('warn', repeats, true), ...this.lines('info', ended, false)];
  }

  private lines(level: Line['level'], findings: Finding[], repeated: boolean): Line[] {
    const out: Line[] = [];
    const byCheck = new Map<CheckName, Finding[]>();
    for (const f of findings) {
      const list = byCheck.get(f.check);
      if (list) list.push(f);
      else byCheck.set(f.check, [f]);
    }
    for (const [check, list] of byCheck) {
      const text = CHECK_MESSAGES[check];
      for (const f of list.slice(0, this.maxPerRound)) {
        const fields = level === 'info' ? withoutAction(f.fields) : repeated ? { ...f.fields, repeated: 'still holds' } : f.fields;
        out.push({ level, msg: level === 'warn' ? text.begins : text.ends, fields: { check, ...fields } });
      }
      const rest = list.length - this.maxPerRound;
      if (rest > 0) {
        const msg = level === 'warn' ? `${rest} ${text.many} (kv-dc-relay status lists them)` : `${rest} more: ${text.ends}`;
        out.push({ level, msg, fields: { check, more: rest } });
      }
    }
    return out;
  }
}

function withoutAction(fields: FindingFields): FindingFields {
  const { action: _action, forSeconds: _for, ...rest } = fields;
  return rest;
}
