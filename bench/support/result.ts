// The row every benchmark module returns from `run()`.
export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  /** A reference measured in the same run (e.g. memcpy of the same bytes). */
  baseline?: { name: string; value: number };
  /** value / baseline.value. */
  ratio?: number;
  note?: string;
}

export interface BenchModule {
  run(): Promise<BenchResult[]>;
}
