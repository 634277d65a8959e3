// "Did you mean": the fields a schema allows where an unknown one was found, and the nearest of them
// to a misspelt name (a different case, a typo, a missing or extra letter).
import { distance } from 'fastest-levenshtein';
import type { z } from 'zod';

/** The zod v4 definition fields the walk reads (wrappers, containers, alternatives). */
interface Def {
  type: string;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  shape?: Record<string, z.core.$ZodType>;
  element?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  options?: readonly z.core.$ZodType[];
}

const defOf = (schema: z.core.$ZodType): Def => schema._zod.def as unknown as Def;

/** The object schemas `schema` may be, through optional, default, pipe and union wrappers. */
function objects(schema: z.core.$ZodType): Def[] {
  const def = defOf(schema);
  if (def.type === 'object') return [def];
  if (def.type === 'union') return (def.options ?? []).flatMap(objects);
  const inner = def.innerType ?? def.in;
  return inner ? objects(inner) : [];
}

/** What `schema` holds at `segment`: a field of an object, an element of an array or a record. */
function child(schema: z.core.$ZodType, segment: PropertyKey): z.core.$ZodType[] {
  const def = defOf(schema);
  if (def.type === 'object') return def.shape && typeof segment === 'string' && segment in def.shape ? [def.shape[segment]] : [];
  if (def.type === 'array') return def.element ? [def.element] : [];
  if (def.type === 'record') return def.valueType ? [def.valueType] : [];
  if (def.type === 'union') return (def.options ?? []).flatMap((o) => child(o, segment));
  const inner = def.innerType ?? def.in;
  return inner ? child(inner, segment) : [];
}

/** The field names an object at `path` of `schema` allows (empty when the path leads to none). */
export function knownFields(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let at = [schema];
  for (const segment of path) at = at.flatMap((s) => child(s, segment));
  return [...new Set(at.flatMap(objects).flatMap((o) => Object.keys(o.shape ?? {})))];
}

/**
 * The known field nearest to `name`, when near enough to be what was meant: the same name in
 * another case, or at most a third of its letters (and at least 1, at most 3) edited away.
 */
export function nearestField(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase();
  const sameCase = known.find((k) => k.toLowerCase() === lower);
  if (sameCase) return sameCase;
  const budget = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: { field: string; d: number } | undefined;
  for (const field of known) {
    const d = distance(lower, field.toLowerCase());
    if (d <= budget && (!best || d < best.d)) best = { field, d };
  }
  return best?.field;
}
