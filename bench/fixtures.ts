/** The inbound scenario: a topic of 10 mappings (mixed types, with timestamps) and a ~1 KB payload. */
export const BENCH_MAPPINGS = [
  { name: 'temp-1', casdu: 1, ioa: 1, type: 36, valuePath: 'plant.boilers[0].temp', steps: ['plant', 'boilers', 0, 'temp'], valueType: 'float', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'temp-2', casdu: 1, ioa: 2, type: 36, valuePath: 'plant.boilers[1].temp', steps: ['plant', 'boilers', 1, 'temp'], valueType: 'float', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'press-1', casdu: 1, ioa: 3, type: 13, valuePath: 'plant.boilers[0].pressure', steps: ['plant', 'boilers', 0, 'pressure'], valueType: 'float', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'press-2', casdu: 1, ioa: 4, type: 13, valuePath: 'plant.boilers[1].pressure', steps: ['plant', 'boilers', 1, 'pressure'], valueType: 'float', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'pump-1', casdu: 1, ioa: 5, type: 30, valuePath: 'plant.pumps[0].running', steps: ['plant', 'pumps', 0, 'running'], valueType: 'bool', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'pump-2', casdu: 1, ioa: 6, type: 30, valuePath: 'plant.pumps[1].running', steps: ['plant', 'pumps', 1, 'running'], valueType: 'bool', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'breaker', casdu: 1, ioa: 7, type: 1, valuePath: 'grid.breaker', steps: ['grid', 'breaker'], valueType: 'bool', tsPath: 'grid.ts', tsSteps: ['grid', 'ts'] },
  { name: 'tap', casdu: 1, ioa: 8, type: 32, valuePath: 'grid.transformer.tap', steps: ['grid', 'transformer', 'tap'], valueType: 'int', tsPath: 'grid.ts', tsSteps: ['grid', 'ts'] },
  { name: 'flow', casdu: 1, ioa: 9, type: 36, valuePath: 'plant.flow', steps: ['plant', 'flow'], valueType: 'string', tsPath: 'plant.ts', tsSteps: ['plant', 'ts'] },
  { name: 'load', casdu: 1, ioa: 10, type: 36, valuePath: 'grid.load', steps: ['grid', 'load'], valueType: 'float', tsPath: 'grid.ts', tsSteps: ['grid', 'ts'] },
] as const;

export const benchMappingsConfig = () =>
  BENCH_MAPPINGS.map((m) => ({ name: m.name, topic: 'bench', casdu: m.casdu, ioa: m.ioa, type: m.type, valuePath: m.valuePath, valueType: m.valueType, timestampPath: m.tsPath }));

export const benchPayload = (): string => {
  const body = {
    plant: {
      ts: '2026-11-21T10:15:00.000Z',
      boilers: [{ temp: 71.5, pressure: 0.42, id: 'B1', notes: 'x'.repeat(120) }, { temp: '68.25', pressure: 0.4, id: 'B2', notes: 'y'.repeat(120) }],
      pumps: [{ running: true, rpm: 1450 }, { running: 'off', rpm: 0 }],
      flow: '12.75',
    },
    grid: { ts: 1763720100, breaker: 1, transformer: { tap: -3, model: 'T-400' }, load: 83.2 },
    meta: { site: 'plant-a', firmware: '4.2.1', padding: 'z'.repeat(380) },
  };
  return JSON.stringify(body);
};
