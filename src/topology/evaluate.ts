// The readiness evaluator shared by base entries and adapters (identity-topology-load.md §3.2,
// upstream discovery/readiness.rs). Pure: units in, evaluation out.
import { WorkerRole } from '../wire/enums';

/** A readiness unit: the workers of one endpoint that share a worker type and needs. */
export interface ReadinessUnit {
  /** The unit's worker type as a wire role; LEGACY = declared without a worker type. */
  role: WorkerRole;
  /** DNF: the outer list is OR, each inner list is AND. Empty = no requirement. */
  needs: readonly (readonly WorkerRole[])[];
  liveCount: number;
}

export interface ReadinessEvaluation {
  ready: boolean;
  /** Typed roles with at least one live worker, in role order. */
  present: WorkerRole[];
  /** In role order; always empty on the legacy (compatibility) branch. */
  missing: WorkerRole[];
  /** Non-aggregated typed roles live in more than one unit, in role order. */
  ambiguous: WorkerRole[];
  hasLegacy: boolean;
}

const byRole = (a: WorkerRole, b: WorkerRole): number => a - b;

export function evaluateReadiness(units: readonly ReadinessUnit[]): ReadinessEvaluation {
  const typed = units.filter((u) => u.role !== WorkerRole.LEGACY);
  const presentSet = new Set(typed.filter((u) => u.liveCount > 0).map((u) => u.role));
  const present = [...presentSet].sort(byRole);
  const hasLive = units.some((u) => u.liveCount > 0);
  const hasLegacy = typed.length !== units.length;
  // Mixed legacy + typed deployments cannot be gated strictly: any live worker serves.
  if (hasLegacy) return { ready: hasLive, present, missing: [], ambiguous: [], hasLegacy };

  const liveUnitsPerRole = new Map<WorkerRole, number>();
  for (const u of typed) {
    if (u.liveCount > 0) liveUnitsPerRole.set(u.role, (liveUnitsPerRole.get(u.role) ?? 0) + 1);
  }
  const ambiguous = [...liveUnitsPerRole]
    .filter(([role, n]) => role !== WorkerRole.AGGREGATED && n > 1)
    .map(([role]) => role)
    .sort(byRole);

  const missing = new Set<WorkerRole>();
  for (const u of typed) {
    if (!presentSet.has(u.role)) missing.add(u.role);
    // The needs of dead units are ignored; a live unit needs one fully present alternative.
    const satisfied = u.needs.some((alternative) => alternative.every((r) => presentSet.has(r)));
    if (u.liveCount > 0 && u.needs.length > 0 && !satisfied) {
      for (const r of u.needs.flat()) if (!presentSet.has(r)) missing.add(r);
    }
  }
  return { ready: hasLive && missing.size === 0, present, missing: [...missing].sort(byRole), ambiguous, hasLegacy };
}
