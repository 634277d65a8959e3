// Load validators (identity-topology-load.md §2.1, §4). A window is unusable when its envelope or an
// entry key is missing, malformed or repeated; an entry whose identity or status is unsupported is
// skipped here and quarantined by the per-entry validator.
import { DataStatus, isKnownEnumValue } from './enums';
import { ProducerKey, poolKey } from './producer-key';
import { checkText } from './text';
import type {
  KvPoolLoadEntry,
  KvPoolLoadUpdate,
  LoadView,
  ModelServingLoad,
  PoolServingLoad,
  ProducerIdentity,
  ServingLoadUpdate,
} from './types';
import { checkPoolId, checkProducerIdentity, checkProtocolEnvelope } from './validate-identity';
import { checked, fail, WireViolation, type WireValidation } from './validation';

function entryProducer(entry: { producer?: ProducerIdentity }): ProducerIdentity {
  if (!entry.producer) fail('MissingField', 'pool producer is missing', { field: 'pool producer' });
  return entry.producer;
}

function checkWindowEnvelope(update: { protocolVersion: number; contractMarker: number; relay?: unknown }): void {
  checkProtocolEnvelope(update.protocolVersion, update.contractMarker);
  if (!update.relay) fail('MissingField', 'relay identity is missing', { field: 'relay identity' });
}

/** Pool keys must be unique; an unsupported producer is left to the entry validator. */
function checkPoolKeys(entries: readonly { producer?: ProducerIdentity }[]): void {
  const keys = new Set<string>();
  for (const entry of entries) {
    const result = ProducerKey.from(entryProducer(entry));
    if (result.ok) {
      if (keys.has(result.key.key)) fail('DuplicateLoadPool', 'load window repeats a pool producer');
      keys.add(result.key.key);
    } else if (!result.error.unsupported) {
      throw new WireViolation(result.error);
    }
  }
}

/** KvPoolLoadUpdate window: envelope, relay identity, unique pool keys. */
export const validateKvPoolLoadUpdate = (update: KvPoolLoadUpdate): WireValidation =>
  checked(() => {
    checkWindowEnvelope(update);
    checkPoolKeys(update.pools);
  });

/** One KvPoolLoadEntry: its producer identity. Counts carry no rule (0 = unknown / incomplete). */
export const validateKvPoolLoadEntry = (entry: KvPoolLoadEntry): WireValidation =>
  checked(() => checkProducerIdentity(entryProducer(entry)));

export const validateServingLoadUpdate = (update: ServingLoadUpdate): WireValidation =>
  checked(() => {
    checkWindowEnvelope(update);
    checkPoolKeys(update.pools);
    const models = new Set<string>();
    for (const model of update.models) {
      checkText('serving load namespace', model.namespace);
      checkText('serving load canonical model ID', model.canonicalModelId);
      const key = JSON.stringify([model.namespace, model.canonicalModelId]);
      if (models.has(key)) {
        fail(
          'DuplicateLoadModel',
          `serving load repeats model ${JSON.stringify(model.canonicalModelId)} in namespace ${JSON.stringify(model.namespace)}`,
        );
      }
      models.add(key);
    }
  });

/** Returns whether the view is COMPLETE; UNSPECIFIED or unknown → DataStatus(v). */
function checkStatus(load: LoadView): boolean {
  if (!isKnownEnumValue('DataStatus', load.status) || load.status === DataStatus.UNSPECIFIED) {
    fail('DataStatus', `unsupported data status ${load.status}`, { value: load.status });
  }
  return load.status === DataStatus.COMPLETE;
}

function requirePresence(field: string, value: bigint | undefined, required: boolean): void {
  if ((value !== undefined) !== required) {
    fail('LoadViewField', `${field} must be ${required ? 'set' : 'unset'} in this load view`, { field });
  }
}

export const validatePoolServingLoad = (pool: PoolServingLoad): WireValidation =>
  checked(() => {
    checkProducerIdentity(entryProducer(pool));
    const load = pool.load;
    if (!load) fail('MissingField', 'pool load view is missing', { field: 'pool load view' });
    const complete = checkStatus(load);
    if (load.requests) fail('LoadViewField', 'pool requests must be unset', { field: 'pool requests' });
    const tokens = load.tokens;
    if (!tokens) fail('MissingField', 'pool token load is missing', { field: 'pool token load' });
    requirePresence('active_prefill_tokens', tokens.activePrefillTokens, complete);
    requirePresence('active_decode_blocks', tokens.activeDecodeBlocks, complete);
    requirePresence('pool awaiting_first_token_input_tokens', tokens.awaitingFirstTokenInputTokens, false);
    requirePresence('pool inflight_input_tokens', tokens.inflightInputTokens, false);
    requirePresence('pool input_tokens_total', tokens.inputTokensTotal, false);
    requirePresence('pool output_tokens_total', tokens.outputTokensTotal, false);
    if (!pool.deployment) fail('MissingField', 'pool deployment status is missing', { field: 'pool deployment status' });
  });

export const validateModelServingLoad = (model: ModelServingLoad): WireValidation =>
  checked(() => {
    checkText('serving load namespace', model.namespace);
    checkText('serving load canonical model ID', model.canonicalModelId);
    const load = model.load;
    if (!load) fail('MissingField', 'model load view is missing', { field: 'model load view' });
    const complete = checkStatus(load);
    const requests = load.requests;
    if (!requests) fail('MissingField', 'model request counts is missing', { field: 'model request counts' });
    requirePresence('requests_awaiting_first_token', requests.requestsAwaitingFirstToken, complete);
    requirePresence('requests_generating', requests.requestsGenerating, complete);
    const tokens = load.tokens;
    if (!tokens) fail('MissingField', 'model token load is missing', { field: 'model token load' });
    requirePresence('awaiting_first_token_input_tokens', tokens.awaitingFirstTokenInputTokens, complete);
    requirePresence('inflight_input_tokens', tokens.inflightInputTokens, complete);
    requirePresence('input_tokens_total', tokens.inputTokensTotal, true);
    requirePresence('output_tokens_total', tokens.outputTokensTotal, true);
    requirePresence('model active_prefill_tokens', tokens.activePrefillTokens, false);
    requirePresence('model active_decode_blocks', tokens.activeDecodeBlocks, false);
    const deployment = model.deployment;
    if (!deployment) fail('MissingField', 'model deployment status is missing', { field: 'model deployment status' });
    const seen = new Set<string>();
    for (const poolId of deployment.servingPools) {
      checkPoolId(poolId);
      const key = poolKey(poolId);
      if (seen.has(key)) fail('DuplicateServingPool', 'model deployment repeats a serving pool');
      seen.add(key);
    }
  });
