import { missingMessage, missingPrograms, PROGRAMS } from '../support/prerequisites';

/**
 * Before any test runs: every program the tests start is on PATH, or the run stops at once with one
 * message saying what to install (instead of hundreds of failures, each `redis-server exited`).
 */
export default (): void => {
  const missing = missingPrograms(PROGRAMS.map((p) => p.program));
  if (missing.length > 0) {
    process.stderr.write(`\n${missingMessage(missing)}\n\n`);
    throw new Error(`the tests need ${missing.map((p) => p.program).join(', ')}: see above`);
  }
};
