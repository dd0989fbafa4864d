import type { CompiledPath } from './path';

export const TYPE_CODES = [1, 13, 30, 32, 36] as const;
export type TypeCode = (typeof TYPE_CODES)[number];

export const VALUE_TYPES = ['float', 'int', 'bool', 'string'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

export interface Mapping {
  readonly name: string;
  readonly topic: string;
  readonly casdu: number;
  readonly ioa: number;
  readonly type: TypeCode;
  readonly valuePath: CompiledPath;
  readonly valueType: ValueType;
  readonly timestampPath?: CompiledPath;
  /** CONTRACT 5.5: raw value text → the value used in its place (own keys only, in a map). */
  readonly valueMap?: ReadonlyMap<string, MappedValue>;
  /** CONTRACT 5.5: linear scaling (types 13 and 36). */
  readonly scale?: Scale;
  /** CONTRACT 5.5: on an array body, applied to every item (`each`) or once to the array (`whole`). */
  readonly array: ArrayMode;
}

export type ArrayMode = 'each' | 'whole';

/** What a value map gives in place of a raw value. */
export type MappedValue = number | boolean | string;

/** CONTRACT 5.5: `v × factor + offset`, or the raw range onto the scaled one, limited to it with `clamp`. */
export type Scale =
  | { readonly factor: number; readonly offset: number }
  | { readonly raw: readonly [number, number]; readonly scaled: readonly [number, number]; readonly clamp: boolean };

/** The type codes whose values may be scaled: the numbers. */
export const SCALED_TYPES: readonly TypeCode[] = [13, 36];

/** CONTRACT 3: the data point object as written to the process image and the stream. */
export interface DataPoint {
  readonly casdu: number;
  readonly ioa: number;
  readonly type: TypeCode;
  readonly value: boolean | number;
  readonly timestamp: string;
  readonly source: string;
}

export const CASDU_MAX = 65535;
export const IOA_MAX = 16777215;

