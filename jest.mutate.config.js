/**
 * The tests `npm run mutate` runs against each mutant (stryker.config.json): the in-process tests
 * of the pure modules it mutates, nothing that spawns the CLI or needs a built `dist/`. The
 * delivery-record tests use their own private redis-server, as in `npm test`.
 * @type {import('jest').Config}
 */
const base = require('./jest.config.js');

module.exports = {
  ...base,
  testMatch: [
    '**/mapping.*.test.ts',
    '**/streams.laneState.test.ts',
    '**/streams.deliveryState.test.ts',
    '**/streams.marbles.test.ts',
    '**/streams.body.test.ts',
    '**/streams.bodyTime.test.ts',
    '**/formats.unit.test.ts',
    '**/callers.settings.test.ts',
    '**/callers.names.test.ts',
    '**/network.guard.test.ts',
    '**/callers.rate.test.ts',
    '**/callers.rateState.test.ts',
    '**/inbound.append.test.ts',
    '**/ui.model.test.ts',
    '**/streams.report.test.ts',
    '**/streams.groupCommit.test.ts',
  ],
  // a mutant may not type-check: the tests run it as JavaScript (Stryker marks mutated files @ts-nocheck)
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }] },
};
