import * as E from 'fp-ts/Either';
import { isObject } from './path';

/**
 * What a `POST /api/datapoints` body may be (CONTRACT 5.1, 5.5): one JSON object, or an array of 1
 * to `Http:MaxBatchItems` objects — buffered readings, or a gateway's many devices — every mapping
 * applied to each item.
 */
export type Payload =
  | { readonly kind: 'object'; readonly value: object }
  | { readonly kind: 'items'; readonly items: readonly object[] };

/** `Http:MaxBatchItems`'s default. */
export const DEFAULT_MAX_BATCH_ITEMS = 1000;

/** The body as a payload, or the `invalid_body` message: the array empty, its first item that is no object, or the limit. */
export const payloadOf = (json: unknown, maxItems: number): E.Either<string, Payload> => {
  if (isObject(json)) return E.right({ kind: 'object', value: json });
  const shape = `the body must be a JSON object or an array of 1 to ${maxItems} objects`;
  if (!Array.isArray(json)) return E.left(shape);
  if (json.length === 0) return E.left(`${shape}: the array is empty`);
  if (json.length > maxItems) return E.left(`${shape}: the array has ${json.length} items, more than ${maxItems} (Http:MaxBatchItems)`);
  const bad = json.findIndex((item) => !isObject(item));
  if (bad >= 0) return E.left(`${shape}: item ${bad} is not an object`);
  return E.right({ kind: 'items', items: json as object[] });
};

/** How many items a payload has: undefined for one object (its answers have no `items`). */
export const itemCount = (p: Payload): number | undefined => (p.kind === 'items' ? p.items.length : undefined);
