// The deployment model: which configured endpoints materialize a pool, with which identity and
// descriptor metadata, and how each endpoint takes part in serving topology. Pure.
//
// Rules (relay-config.md; identity-topology-load.md §5.1):
// - a pool materializes when the endpoint's model resolves (kvBlockSize > 0), at least one worker has
//   kvEvents, its registrations survive the deployment-wide name collision filter and pass the
//   registry checks, no other endpoint resolves to the same pool id (then all of them are fenced), and
//   the deployment does not hold it unbound (a Dynamo endpoint without an active KV event source);
// - an endpoint takes part in topology while its base-model registration survives; adapters likewise.
import type { EndpointConfig } from '../config/schema';
import type { DynamoEndpointId, KvPoolId, KvQuerySemantics, ModelRegistration } from '../wire/types';
import { KvQueryHashFormat } from '../wire/enums';
import { endpointRoles } from '../topology/readiness';
import { poolIdDisplay } from '../identity';
import { poolIdOf } from './pool-identity';
import { collidingNames, endpointRegistrations, registrationConflict, withoutCollisions } from './registrations';

export interface PoolSpec {
  /** Display form of the pool id (`{cache}:{routing}/{dc}`); sorts like PoolId. */
  key: string;
  poolId: KvPoolId;
  servingEndpoint: DynamoEndpointId;
  querySemantics: KvQuerySemantics;
  registrations: ModelRegistration[];
  poolRoles: number[];
  /** The endpoint as configured (workers, sources, topology facts). */
  endpoint: EndpointConfig;
}

export interface TopologySpec {
  endpoint: EndpointConfig;
  /** Adapters whose registration survived (request-facing served model names). */
  adapters: { servedModel: string; workers: bigint[] }[];
  /** Key of the endpoint's materialized pool, if any. */
  poolKey?: string;
}

export interface Deployment {
  /** Materialized pools, sorted by key. */
  pools: PoolSpec[];
  topology: TopologySpec[];
  /** Why endpoints did not materialize (for logs). */
  conflicts: string[];
}

export function endpointName(ep: { namespace: string; component: string; endpoint: string }): string {
  return `${ep.namespace}/${ep.component}/${ep.endpoint}`;
}

export function querySemanticsOf(ep: EndpointConfig): KvQuerySemantics {
  return {
    kvBlockSize: ep.model.kvBlockSize,
    hashFormat: ep.model.hashFormat === 'eagle' ? KvQueryHashFormat.DYNAMO_EAGLE_V1 : KvQueryHashFormat.DYNAMO_STANDARD_V1,
  };
}

export interface DeploymentOptions {
  /**
   * The workers' KV events come from an event plane the deployment does not list per worker (a
   * Dynamo deployment's): an endpoint materializes without `kvEvents` on its workers.
   */
  eventPlane?: boolean;
  /** Endpoints (by name) whose pool must not bind, with why (a Dynamo endpoint without an active KV event source). */
  unbound?: ReadonlyMap<string, string>;
}

export function buildDeployment(dcId: string, endpoints: readonly EndpointConfig[], options: DeploymentOptions = {}): Deployment {
  const conflicts: string[] = [];
  const allRegs = endpoints.map(endpointRegistrations);
  const colliding = collidingNames(allRegs);
  for (const name of [...colliding].sort()) conflicts.push(`model name ${name} resolves to more than one target; dropped everywhere`);

  const candidates: PoolSpec[] = [];
  const topology: TopologySpec[] = [];
  endpoints.forEach((ep, i) => {
    const regs = withoutCollisions(allRegs[i], colliding);
    const baseSurvives = regs.some((r) => r.target?.base !== undefined);
    if (baseSurvives) {
      const served = new Set(regs.filter((r) => r.target?.lora).map((r) => r.canonicalModelId));
      topology.push({
        endpoint: ep,
        adapters: ep.adapters
          .filter((a) => served.has(a.servedModel))
          .map((a) => ({ servedModel: a.servedModel, workers: a.workers ?? ep.workers.map((w) => w.id) })),
      });
    }
    const reason = materializationProblem(ep, regs, options);
    if (reason !== undefined) {
      if (options.eventPlane || ep.workers.some((w) => w.kvEvents)) conflicts.push(`${endpointName(ep)}: not materialized: ${reason}`);
      return;
    }
    const poolId = poolIdOf(ep, dcId);
    candidates.push({
      key: poolIdDisplay(poolId),
      poolId,
      servingEndpoint: { namespace: ep.namespace, component: ep.component, endpoint: ep.endpoint },
      querySemantics: querySemanticsOf(ep),
      registrations: regs,
      poolRoles: endpointRoles(ep),
      endpoint: ep,
    });
  });

  const claims = new Map<string, number>();
  for (const p of candidates) claims.set(p.key, (claims.get(p.key) ?? 0) + 1);
  const pools = candidates.filter((p) => {
    if (claims.get(p.key) === 1) return true;
    conflicts.push(`${endpointName(p.endpoint)}: not materialized: pool ${p.key} is claimed by multiple serving endpoints`);
    return false;
  });
  pools.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

  const byEndpoint = new Map(pools.map((p) => [p.endpoint, p.key]));
  for (const t of topology) t.poolKey = byEndpoint.get(t.endpoint);
  return { pools, topology, conflicts };
}

function materializationProblem(ep: EndpointConfig, regs: readonly ModelRegistration[], options: DeploymentOptions): string | undefined {
  if (options.eventPlane ? ep.workers.length === 0 : !ep.workers.some((w) => w.kvEvents)) return 'no worker has kvEvents';
  const unbound = options.unbound?.get(endpointName(ep));
  if (unbound !== undefined) return unbound;
  if (ep.model.kvBlockSize === 0) return 'kvBlockSize is 0';
  return registrationConflict(regs);
}
