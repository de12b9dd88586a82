// server.workers: auto counts the cores, capped by a container's CPU quota.

import { expect } from 'chai';
import { usableCpus, type ReadText } from '../../../src/config/usable-cpus.js';

const files =
  (entries: Record<string, string>): ReadText =>
  (path) =>
    entries[path];

describe('the CPUs server.workers: auto counts', () => {
  it('is the cores without a quota (no cgroup files, or cpu.max saying max)', () => {
    expect(usableCpus(files({}), 8)).to.equal(8);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }), 8)).to.equal(8);
    expect(
      usableCpus(files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '-1\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' }), 8),
    ).to.equal(8);
  });

  it("is a cgroup v2 quota's CPUs, rounded up, when fewer than the cores", () => {
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '200000 100000\n' }), 32)).to.equal(2);
    // Kubernetes' limits.cpu: 1500m.
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }), 32)).to.equal(2);
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '50000 100000\n' }), 32)).to.equal(1);
    // A quota above the cores leaves the cores.
    expect(usableCpus(files({ '/sys/fs/cgroup/cpu.max': '1600000 100000\n' }), 4)).to.equal(4);
  });

  it("is a cgroup v1 quota's CPUs", () => {
    const v1 = files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': '300000\n', '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' });
    expect(usableCpus(v1, 16)).to.equal(3);
  });

  it('reads this machine without failing, at least one', () => {
    expect(usableCpus()).to.be.at.least(1);
  });
});
