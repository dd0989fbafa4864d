// Preloaded (`node -r`) by test/stop.process.test.ts: writes "stop handlers installed" on stderr at
// the moment the process adds its first SIGTERM listener, so that a test can signal from exactly
// the moment the CLI promises to catch it, whatever the machine's load.
const add = process.on;
process.on = function on(event, listener) {
  const result = add.call(this, event, listener);
  if (event === 'SIGTERM') {
    process.on = add;
    require('node:fs').writeSync(2, 'stop handlers installed\n');
  }
  return result;
};
