/** @type {import('jest').Config} */
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // the image smoke test needs a container engine: `npm run test:image` (jest.image.config.js)
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/image/'],
  // Each test file starts its own redis-server; two workers match the two cores.
  maxWorkers: 2,
  // every program the tests start is checked first (support/prerequisites.ts)
  globalSetup: '<rootDir>/test/globalSetup.ts',
  testTimeout: 60000,
  // A test that fails before its own clean-up must not hang the run (CI has a time limit): the
  // helpers close what they start; this is the safety net.
  forceExit: true,
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
};
