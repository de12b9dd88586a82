// Mocha's spec output, then one closing line CI reads: "N passed, N failed"; then a
// watchdog that fails the run if the process does not exit by itself (open-handles.cjs).
'use strict';
const Mocha = require('mocha');
const { watchExit } = require('./open-handles.cjs');

const { EVENT_RUN_END } = Mocha.Runner.constants;

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      const pending = s.pending ? `, ${s.pending} skipped` : '';
      // After the spec epilogue, so it is the last line printed.
      process.nextTick(() => console.log(`${s.passes || 0} passed, ${s.failures || 0} failed${pending}`));
      watchExit(() => ({ passes: s.passes || 0, failures: s.failures || 0 }));
    });
  }
}

module.exports = SpecWithTotals;
