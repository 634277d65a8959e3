export { evaluateReadiness, type ReadinessUnit, type ReadinessEvaluation } from './evaluate';
export {
  buildTopologyEntries,
  endpointRoles,
  type WorkerType,
  type TopologyWorkerInput,
  type TopologyAdapterInput,
  type TopologyEndpointInput,
} from './readiness';
export { ReadinessProjection, type ReadinessUpdate } from './projection';
export { HealthMonitor, type HealthTarget } from './health';
