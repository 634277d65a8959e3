import { parseVllmKvUsage, usageByRank, usedBlocks, type UsageSample } from '../../src/load';

describe('parseVllmKvUsage', () => {
  const cases: [string, string, UsageSample[]][] = [
    ['unlabelled single engine', 'vllm:kv_cache_usage_perc 0.25\n', [{ engine: undefined, value: 0.25 }]],
    [
      'vLLM exposition with HELP/TYPE, other metrics and extra labels',
      [
        '# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.',
        '# TYPE vllm:kv_cache_usage_perc gauge',
        'vllm:kv_cache_usage_perc{engine="0",model_name="meta/llama"} 0.5',
        'vllm:kv_cache_usage_perc{model_name="meta/llama",engine="1"} 1.0',
        'vllm:num_requests_running{engine="0",model_name="meta/llama"} 3.0',
        'vllm:gpu_cache_usage_perc{engine="0"} 0.9',
        'process_cpu_seconds_total 12.5',
      ].join('\n'),
      [
        { engine: '0', value: 0.5 },
        { engine: '1', value: 1 },
      ],
    ],
    ['a longer metric name with the same prefix is another metric', 'vllm:kv_cache_usage_perc_total 5\nvllm:kv_cache_usage_percent{engine="0"} 0.1', []],
    ['timestamp, CRLF, indentation and spaces in labels', '  vllm:kv_cache_usage_perc{ engine = "2" , x="y" } 7.5e-1 1700000000000\r\n', [{ engine: '2', value: 0.75 }]],
    ['escaped label values', 'vllm:kv_cache_usage_perc{model_name="a\\"b\\\\c\\nd",engine="3"} .125', [{ engine: '3', value: 0.125 }]],
    ['trailing comma in labels', 'vllm:kv_cache_usage_perc{engine="4",} 0', [{ engine: '4', value: 0 }]],
    ['special values', 'vllm:kv_cache_usage_perc{engine="0"} NaN\nvllm:kv_cache_usage_perc{engine="1"} +Inf', [
      { engine: '0', value: NaN },
      { engine: '1', value: Infinity },
    ]],
    ['malformed lines are skipped without hiding the others', [
      'vllm:kv_cache_usage_perc{engine="0" 0.1',
      'vllm:kv_cache_usage_perc{engine="1"} abc',
      'vllm:kv_cache_usage_perc{engine="2"}',
      'vllm:kv_cache_usage_perc{engine="3"} 0.1 2 3',
      'vllm:kv_cache_usage_perc{engine="4\\q"} 0.1',
      'vllm:kv_cache_usage_perc{engine="5"} 0.3',
    ].join('\n'), [{ engine: '5', value: 0.3 }]],
    ['OpenMetrics # EOF and comments', '# a comment\nvllm:kv_cache_usage_perc 0.2\n# EOF\n', [{ engine: undefined, value: 0.2 }]],
    ['empty body', '', []],
  ];
  test.each(cases)('%s', (_name, text, expected) => {
    expect(parseVllmKvUsage(text)).toEqual(expected);
  });
});

describe('usageByRank', () => {
  const s = (engine: string | undefined, value: number): UsageSample => ({ engine, value });
  const cases: [string, UsageSample[], number, number, [number, number][]][] = [
    ['unlabelled sample on a single-rank worker is its rank', [s(undefined, 0.4)], 3, 1, [[3, 0.4]]],
    ['unlabelled sample on a multi-rank worker is ambiguous', [s(undefined, 0.4)], 0, 2, []],
    ['labels are absolute ranks; undeclared ranks ignored', [s('3', 0.1), s('4', 0.2), s('5', 0.3), s('2', 0.9)], 3, 2, [[3, 0.1], [4, 0.2]]],
    ['a single-rank worker may label its rank', [s('0', 0.6)], 0, 1, [[0, 0.6]]],
    ['non-numeric engine labels ignored', [s('gpu0', 0.6), s('-1', 0.1), s('1.0', 0.2)], 0, 4, []],
    ['out-of-range or non-finite usage leaves the rank unobserved', [s('0', NaN), s('1', 1.5), s('2', -0.1), s('3', 1)], 0, 4, [[3, 1]]],
    ['two samples for one rank leave it unobserved', [s('0', 0.1), s('0', 0.2), s('1', 0.5)], 0, 2, [[1, 0.5]]],
    ['labelled and unlabelled for the same single rank is ambiguous', [s('0', 0.1), s(undefined, 0.2)], 0, 1, []],
  ];
  test.each(cases)('%s', (_name, samples, start, size, expected) => {
    expect([...usageByRank(samples, start, size)].sort((a, b) => a[0] - b[0])).toEqual(expected);
  });

  test('usedBlocks rounds usage × capacity', () => {
    expect(usedBlocks(0.5, 1000)).toBe(500n);
    expect(usedBlocks(0.0015, 1000)).toBe(2n); // 1.5 rounds up
    expect(usedBlocks(0.0014, 1000)).toBe(1n);
    expect(usedBlocks(1, 1000)).toBe(1000n);
    expect(usedBlocks(0, 1000)).toBe(0n);
  });
});
