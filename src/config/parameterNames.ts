/**
 * CONTRACT 1 "A misspelt parameter is never ignored": the names given under a section this contract
 * defines that name no parameter, each with the nearest one. Names outside these sections (`PATH`,
 * `OTEL_*`, `NODE_*`, …) and a bare section name are not looked at.
 */

/** The parameters as given: lower-case names to their text, and each name as it was written. */
export interface GivenNames {
  keys(): IterableIterator<string>;
  readonly spelled?: ReadonlyMap<string, string>;
}

const SECTIONS: ReadonlySet<string> = new Set(['connectionstrings', 'datastore', 'webhooks', 'http', 'authentication']);

/** Edits (insert, delete, replace) from `a` to `b`. */
const distance = (a: string, b: string): number => {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
};

const sectionOf = (name: string): string => name.slice(0, name.indexOf(':')).toLowerCase();

/** The known parameter nearest to `name` (lower case): of its own section when that has any, else of all. */
export const nearestParameter = (name: string, known: readonly string[]): string => {
  const own = known.filter((k) => sectionOf(k) === sectionOf(name));
  const pool = own.length > 0 ? own : known;
  let best = pool[0]!;
  for (const k of pool) if (distance(name, k.toLowerCase()) < distance(name, best.toLowerCase())) best = k;
  return best;
};

/** The words of such an error: the operator commands, which fall back on defaults past other errors, never do past this one. */
export const UNKNOWN_PARAMETER = 'is not a startup parameter';

/** One message for every given name under a section that is none of `known` (canonical spellings). */
export const unknownParameters = (given: GivenNames, known: readonly string[]): string[] => {
  const lower = new Set(known.map((k) => k.toLowerCase()));
  return [...given.keys()]
    .filter((k) => k.includes(':') && SECTIONS.has(sectionOf(k)) && !lower.has(k))
    .map((k) => `${given.spelled?.get(k) ?? k} ${UNKNOWN_PARAMETER}: did you mean ${nearestParameter(k, known)}?`);
};
