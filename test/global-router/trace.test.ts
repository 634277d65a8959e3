// The Mooncake trace: strict, bounded parsing; the shared file as it is; windows replayed at a chosen
// rate, the load relative to each window's own capacity; block ids expanded to tokens so that equal
// ids are equal tokens.
import * as path from 'path';
import { traceCapacityPerS } from '../../examples/global-router/sim/capacity';
import { LLAMA3_8B_A100 } from '../../examples/global-router/sim/engine/calibration';
import { defaultSetup, Workload } from '../../examples/global-router/sim/experiment';
import { outputIds, promptTokens, type PromptSpec } from '../../examples/global-router/sim/request';
import { parseTrace, parseTraceLine, readTrace, timeScaleFor, traceRate, traceRequests, TraceError, windowStart } from '../../examples/global-router/sim/trace';

const TRACE = path.resolve(__dirname, '..', '..', '..', 'shared', 'traces', 'mooncake_conversation_trace.jsonl');

const line = (o: object) => JSON.stringify(o);
const ok = { timestamp: 0, input_length: 1000, output_length: 10, hash_ids: [4, 5] };

describe('parsing', () => {
  it('reads a record', () => {
    expect(parseTraceLine(line(ok), 'x:1')).toEqual({ timestampMs: 0, inputLength: 1000, outputLength: 10, hashIds: [4, 5] });
  });

  it.each([
    ['{', /x:1: not JSON/],
    ['[1]', /not a JSON object/],
    [line({ ...ok, timestamp: -1 }), /timestamp/],
    [line({ ...ok, input_length: 0 }), /input_length must be an integer in 1\.\./],
    [line({ ...ok, input_length: 2 ** 21 }), /input_length/],
    [line({ ...ok, output_length: 1.5 }), /output_length/],
    [line({ ...ok, hash_ids: [1] }), /hash_ids must list 2 ids/],
    [line({ ...ok, hash_ids: [1, -2] }), /hash_ids\[1\]/],
  ])('rejects %s', (text, message) => {
    expect(() => parseTraceLine(text, 'x:1')).toThrow(message);
  });

  it('rejects timestamps that go backwards and an empty trace, naming the line', () => {
    expect(() => parseTrace(`${line({ ...ok, timestamp: 5 })}\n\n${line(ok)}\n`, 't.jsonl')).toThrow(/t\.jsonl:3: timestamp goes backwards/);
    expect(() => parseTrace('\n', 't.jsonl')).toThrow(TraceError);
  });

  it('loads the shared Mooncake conversation trace', () => {
    const records = readTrace(TRACE);
    expect(records).toHaveLength(12_031);
    expect(records[0].hashIds[0]).toBe(0);
    // One hour of a production service: about 3.4 requests per second.
    expect(traceRate(records)).toBeCloseTo(3.4, 1);
  });
});

describe('replay windows', () => {
  const records = parseTrace([0, 1000, 3000, 4000].map((t, i) => line({ ...ok, timestamp: t, hash_ids: [0, i] })).join('\n'), 't');

  it('scales the window to the requested rate and numbers its requests from 0', () => {
    expect(timeScaleFor(records, 1)).toBeCloseTo(0.75 / 1, 9); // 3 gaps in 4 s = 0.75/s
    const requests = traceRequests(records, { start: 1, count: 3, timeScale: 0.5 });
    expect(requests.map((r) => [r.id, r.arrivalMs, r.inputTokens, r.outputTokens])).toEqual([
      [0, 0, 1000, 10],
      [1, 1000, 1000, 10],
      [2, 1500, 1000, 10],
    ]);
    expect(requests[2].prompt).toEqual({ kind: 'blocks', ids: [0, 3], blockTokens: 512, length: 1000 });
  });

  it('gives each seed its own window, none overlapping, spread over the whole trace', () => {
    // The Mooncake trace: 13 windows of 900 requests, 927 apart, the last ending 7 records before the end.
    const starts = Array.from({ length: 13 }, (_, i) => windowStart(12_031, 900, i + 1));
    expect(starts[0]).toBe(0);
    expect(starts[12] + 900).toBeLessThanOrEqual(12_031);
    expect(starts[12] + 900).toBeGreaterThan(12_031 - 13);
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(900);
    expect(windowStart(12_031, 900, 14)).toBe(starts[0]); // past the last window: the first again
    expect(windowStart(1000, 1000, 3)).toBe(0);
    expect(() => windowStart(100, 101, 1)).toThrow(RangeError);
    expect(() => windowStart(100, 10, 0)).toThrow(RangeError);
  });

  it('rejects windows outside the trace and bad scales', () => {
    expect(() => traceRequests(records, { start: 2, count: 3, timeScale: 1 })).toThrow(RangeError);
    expect(() => traceRequests(records, { start: 0, count: 1, timeScale: 0 })).toThrow(RangeError);
    expect(() => timeScaleFor(records, -1)).toThrow(RangeError);
  });
});

describe('offered load', () => {
  it("is relative to each window's own capacity, so a heavier window is offered fewer requests per second", () => {
    const setup = defaultSetup();
    setup.run.tracePath = TRACE;
    const workload = Workload.load(setup);
    const records = readTrace(TRACE);
    const at = (seed: number) => {
      const start = windowStart(records.length, 900, seed);
      const window = records.slice(start, start + 900);
      const meanInput = window.reduce((n, r) => n + r.inputLength, 0) / window.length;
      return { run: workload.run(0.7, seed), capacity: traceCapacityPerS(window, 512, LLAMA3_8B_A100, 8), meanInput };
    };
    const [heavy, light] = [at(2), at(10)]; // mean prompts of 14.5 k and 10.7 k tokens
    expect(heavy.meanInput).toBeGreaterThan(1.3 * light.meanInput);
    for (const w of [heavy, light]) {
      expect(w.run.capacityPerS).toBeCloseTo(w.capacity, 9);
      expect(w.run.offeredPerS).toBeCloseTo(0.7 * w.capacity, 9);
      const r = w.run.requests;
      expect(r).toHaveLength(900);
      expect(((r.length - 1) * 1000) / r[r.length - 1].arrivalMs).toBeCloseTo(w.run.offeredPerS, 6);
    }
    expect(heavy.run.offeredPerS).toBeLessThan(0.8 * light.run.offeredPerS);
  });
});

describe('token expansion', () => {
  it('turns equal block ids into equal tokens and cuts the last block at the input length', () => {
    const a = promptTokens({ kind: 'blocks', ids: [0, 7, 9], blockTokens: 512, length: 1100 });
    const b = promptTokens({ kind: 'blocks', ids: [0, 7, 8], blockTokens: 512, length: 1536 });
    expect(a).toHaveLength(1100);
    expect(Array.from(a.subarray(0, 1024))).toEqual(Array.from(b.subarray(0, 1024)));
    expect(Array.from(a.subarray(1024))).not.toEqual(Array.from(b.subarray(1024, 1100)));
    expect(new Set(a.subarray(0, 512)).size).toBeGreaterThan(400); // a block is not one repeated token
    expect(Math.max(...a)).toBeLessThan(128_256);
  });

  it('passes explicit tokens through, and derives an answer from the request id unless given', () => {
    const tokens = Uint32Array.from([1, 2, 3]);
    const spec: PromptSpec = { kind: 'tokens', tokens };
    expect(promptTokens(spec)).toBe(tokens);
    expect(outputIds({ id: 3, outputTokens: 4 })).toEqual(outputIds({ id: 3, outputTokens: 4 }));
    expect(outputIds({ id: 3, outputTokens: 4 })).not.toEqual(outputIds({ id: 4, outputTokens: 4 }));
    expect(outputIds({ id: 3, outputTokens: 2, outputIds: Uint32Array.from([8, 9]) })).toEqual(Uint32Array.from([8, 9]));
  });
});
