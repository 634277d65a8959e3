export type { LoadPool, LoadWorker } from './inputs';
export { parseVllmKvUsage, VLLM_KV_USAGE_METRIC, type UsageSample } from './prometheus';
export { usageByRank, usedBlocks, type RankUsage } from './ranks';
export { MetricsScraper, type MetricsTarget, type UsageObservations } from './scraper';
export { buildPoolLoad } from './pool-load';
export { buildServingLoad } from './serving-load';
export { withReportedBlocks, type ReportedBlocks } from './reported-blocks';
