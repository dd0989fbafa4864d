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
}

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

