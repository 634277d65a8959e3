// The Mooncake conversation trace (../shared/traces, README beside it): one JSON object per line with
// `timestamp` (ms), `input_length`, `output_length` and `hash_ids` (one id per 512-token block of
// the input; equal ids at the same position are a reusable prefix). Parsing is strict and bounded,
// and a replay is a window of it with its timestamps scaled: the time-scale factor sets the load.
import * as fs from 'fs';
import type { SimRequest } from './request';

export interface TraceRecord {
  timestampMs: number;
  inputLength: number;
  outputLength: number;
  hashIds: number[];
}

/** Tokens per hash id in the Mooncake release. */
export const TRACE_BLOCK_TOKENS = 512;
/** Bounds on one record: well above the trace's largest (126 195 input tokens, 2 000 output). */
export const MAX_TRACE_INPUT_TOKENS = 1 << 20;
export const MAX_TRACE_OUTPUT_TOKENS = 1 << 16;
export const MAX_TRACE_RECORDS = 1 << 20;

export class TraceError extends Error {}

function integer(value: unknown, field: string, min: number, max: number, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TraceError(`${where}: ${field} must be an integer in ${min}..${max}`);
  }
  return value;
}

/** One line → a record, or a TraceError naming the line and the field. */
export function parseTraceLine(line: string, where: string, blockTokens = TRACE_BLOCK_TOKENS): TraceRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new TraceError(`${where}: not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TraceError(`${where}: not a JSON object`);
  const o = value as Record<string, unknown>;
  const timestampMs = o.timestamp;
  if (typeof timestampMs !== 'number' || !Number.isFinite(timestampMs) || timestampMs < 0) throw new TraceError(`${where}: timestamp must be a finite number ≥ 0`);
  const inputLength = integer(o.input_length, 'input_length', 1, MAX_TRACE_INPUT_TOKENS, where);
  const outputLength = integer(o.output_length, 'output_length', 1, MAX_TRACE_OUTPUT_TOKENS, where);
  const blocks = Math.ceil(inputLength / blockTokens);
  if (!Array.isArray(o.hash_ids) || o.hash_ids.length !== blocks) throw new TraceError(`${where}: hash_ids must list ${blocks} ids (one per ${blockTokens}-token block of the input)`);
  const hashIds = o.hash_ids.map((id, i) => integer(id, `hash_ids[${i}]`, 0, 0xffff_ffff, where));
  return { timestampMs, inputLength, outputLength, hashIds };
}

/** The whole trace; timestamps must not go backwards (a replay keeps its order). */
export function parseTrace(text: string, source: string, blockTokens = TRACE_BLOCK_TOKENS): TraceRecord[] {
  const records: TraceRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === '') continue;
    if (records.length === MAX_TRACE_RECORDS) throw new TraceError(`${source}: more than ${MAX_TRACE_RECORDS} records`);
    const record = parseTraceLine(lines[i], `${source}:${i + 1}`, blockTokens);
    const previous = records[records.length - 1];
    if (previous && record.timestampMs < previous.timestampMs) throw new TraceError(`${source}:${i + 1}: timestamp goes backwards`);
    records.push(record);
  }
  if (records.length === 0) throw new TraceError(`${source}: no records`);
  return records;
}

export function readTrace(file: string, blockTokens = TRACE_BLOCK_TOKENS): TraceRecord[] {
  return parseTrace(fs.readFileSync(file, 'utf8'), file, blockTokens);
}

/** Requests per second of a run of records, over its own span (first to last arrival). */
export function traceRate(records: readonly TraceRecord[]): number {
  const span = records[records.length - 1].timestampMs - records[0].timestampMs;
  if (records.length < 2 || span <= 0) throw new TraceError('a rate needs at least two records at different times');
  return ((records.length - 1) * 1000) / span;
}

export interface TraceWindow {
  /** Index of the first record replayed. */
  start: number;
  count: number;
  /** Simulated ms per trace ms: 0.5 replays twice as fast as recorded (twice the load). */
  timeScale: number;
}

/** The time scale that replays these records at `ratePerS` requests per second on average. */
export function timeScaleFor(records: readonly TraceRecord[], ratePerS: number): number {
  if (!(ratePerS > 0 && Number.isFinite(ratePerS))) throw new RangeError('rate must be a positive number');
  return traceRate(records) / ratePerS;
}

/**
 * Where the window of `count` records for `seed` (1, 2, …) starts: the trace holds
 * ⌊length / count⌋ windows that do not overlap, spread evenly from its first record to its last,
 * and seed s replays the ((s − 1) mod that)-th. Windows that share no request are closer to
 * independent samples, which the confidence intervals over seeds assume; a seed past the last
 * window replays a window again (with other coins for the policies).
 */
export function windowStart(length: number, count: number, seed: number): number {
  if (!(Number.isInteger(count) && count >= 1 && count <= length)) throw new RangeError(`a window of ${count} records does not fit a trace of ${length}`);
  if (!(Number.isInteger(seed) && seed >= 1)) throw new RangeError('a window seed is an integer ≥ 1');
  const windows = Math.floor(length / count);
  const stride = windows > 1 ? Math.floor((length - count) / (windows - 1)) : 0;
  return ((seed - 1) % windows) * stride;
}

/** The window's records as requests: arrivals relative to the window's first record, scaled. */
export function traceRequests(records: readonly TraceRecord[], window: TraceWindow, blockTokens = TRACE_BLOCK_TOKENS): SimRequest[] {
  const { start, count, timeScale } = window;
  if (!(Number.isInteger(start) && Number.isInteger(count) && start >= 0 && count >= 1 && start + count <= records.length)) {
    throw new RangeError(`window ${start}+${count} is outside the trace (${records.length} records)`);
  }
  if (!(timeScale > 0 && Number.isFinite(timeScale))) throw new RangeError('timeScale must be a positive number');
  const t0 = records[start].timestampMs;
  return records.slice(start, start + count).map((r, i) => ({
    id: i,
    arrivalMs: (r.timestampMs - t0) * timeScale,
    prompt: { kind: 'blocks', ids: r.hashIds, blockTokens, length: r.inputLength },
    inputTokens: r.inputLength,
    outputTokens: r.outputLength,
  }));
}
