#!/usr/bin/env node
// First: a connector catches stop signals from here on, while the rest loads (see runtime/signals).
import './runtime/signals';
import type { Io } from './cli/common';
import { main } from './cli/main';

/** `rest-connector`, the installed command (`package.json` `bin`): the commands are in `src/cli/`. */
if (require.main === module) {
  const io: Io = { out: (s) => process.stdout.write(`${s}\n`), err: (s) => process.stderr.write(`${s}\n`) };
  main(process.argv.slice(2), io).then(
    ({ code, message }) => {
      if (message !== undefined) process.stderr.write(`rest-connector: ${message}\n`);
      // The one place that ends the process: open handles (keep-alive sockets, timers) cannot keep it alive.
      process.exit(code);
    },
    (err: unknown) => {
      process.stderr.write(`rest-connector: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
