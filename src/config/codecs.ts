import * as E from 'fp-ts/Either';
import { pipe } from 'fp-ts/function';
import * as t from 'io-ts';
import { renderValue } from '../mapping/render';

/**
 * The io-ts building blocks of the managed settings' codecs: each check says in its own words what
 * a field must be and what it got, so that an error reads `webhooks[2].filter.ioa[0]: range "9-3" is
 * empty` once `report.ts` has put the field's path in front.
 */

/** A codec from a check that says what is wrong in words. */
export const refine = <A>(name: string, check: (u: unknown) => E.Either<string, A>): t.Type<A, unknown, unknown> =>
  new t.Type<A, unknown, unknown>(
    name,
    (u): u is A => E.isRight(check(u)),
    (u, c) => pipe(check(u), E.fold((message) => t.failure(u, c, message), (a) => t.success(a))),
    (a) => a,
  );

/** An optional field: absent is fine, present must decode (no union, so errors keep one message). */
export const optional = <A>(codec: t.Type<A, unknown, unknown>): t.Type<A | undefined, unknown, unknown> =>
  new t.Type<A | undefined, unknown, unknown>(
    codec.name,
    (u): u is A | undefined => u === undefined || codec.is(u),
    (u, c) => (u === undefined ? t.success(undefined) : codec.validate(u, c)),
    (a) => a,
  );

/** A value as an error shows it (never a secret: those codecs say what is wrong without it). */
export const describe = (u: unknown): string => (u === undefined ? 'nothing' : renderValue(u));

export const intIn = (min: number, max: number) =>
  refine<number>(`integer ${min}..${max}`, (u) =>
    typeof u === 'number' && Number.isInteger(u) && u >= min && u <= max
      ? E.right(u)
      : E.left(`must be an integer in ${min} to ${max}, got ${describe(u)}`),
  );

export const nonEmptyString = refine<string>('non-empty string', (u) =>
  typeof u === 'string' && u.length > 0 ? E.right(u) : E.left(`must be a non-empty string, got ${describe(u)}`),
);

export const positiveNumber = refine<number>('positive number', (u) =>
  typeof u === 'number' && Number.isFinite(u) && u > 0 ? E.right(u) : E.left(`must be a positive number, got ${describe(u)}`),
);

/**
 * The codec of an object whose fields are declared in a table (`webhookSettings.ts`,
 * `mappingSettings.ts`): the required ones must be there, the others may be; every field's
 * problem is reported, in the table's order.
 */
export const objectOf = (fields: Readonly<Record<string, { readonly codec: t.Type<unknown, unknown, unknown>; readonly required?: boolean }>>) => {
  const pick = (required: boolean) =>
    Object.fromEntries(Object.entries(fields).filter(([, f]) => (f.required === true) === required).map(([k, f]) => [k, f.codec]));
  return t.intersection([t.type(pick(true)), t.partial(pick(false))]);
};
