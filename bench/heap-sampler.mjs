// Preloaded by npm run heap-profile into the gateway (`--import`): V8's sampling heap
// profiler, counting every allocation sampled, garbage included. Node's --heap-prof runs
// the same profiler but keeps only what is still alive when it writes the profile, so a
// request's short-lived allocations (collected by the next scavenge) never show in it.
// The first SIGUSR2 starts sampling and prints `heap sampling started`; the second writes
// the profile to $NODEROUTER_HEAP_PROFILE and prints `heap profile written`.
// NODEROUTER_HEAP_INTERVAL: bytes between samples on average (default 4096).
// Nothing here runs without $NODEROUTER_HEAP_PROFILE.

import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const file = process.env.NODEROUTER_HEAP_PROFILE;
if (file) {
  const session = new Session();
  session.connect();
  let sampling = false;
  const options = {
    samplingInterval: Number(process.env.NODEROUTER_HEAP_INTERVAL ?? 4096),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  };
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      session.post('HeapProfiler.enable', () =>
        session.post('HeapProfiler.startSampling', options, (err) =>
          console.log(err ? `heap sampling failed: ${err.message}` : 'heap sampling started'),
        ),
      );
      return;
    }
    session.post('HeapProfiler.stopSampling', (err, r) => {
      if (err) return console.log(`heap sampling failed: ${err.message}`);
      writeFileSync(file, JSON.stringify(r.profile));
      console.log('heap profile written');
    });
  });
}
