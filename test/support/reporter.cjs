// Mocha's spec output, then one closing line CI reads: "N passed, N failed".
'use strict';
const Mocha = require('mocha');

const { EVENT_RUN_END } = Mocha.Runner.constants;

class SpecWithTotals extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once(EVENT_RUN_END, () => {
      const s = runner.stats || {};
      const pending = s.pending ? `, ${s.pending} skipped` : '';
      // After the spec epilogue, so it is the last line printed.
      process.nextTick(() => console.log(`${s.passes || 0} passed, ${s.failures || 0} failed${pending}`));
    });
  }
}

module.exports = SpecWithTotals;
