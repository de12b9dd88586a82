// The bench's pure parts: wrk's output read into figures, /proc/<pid>/stat lines read
// into CPU ticks summed over a process tree, and the sanity check that fails a run
// whose load generator set the ceiling.

import { expect } from 'chai';
import { parseProcStat, treeTicks, type ProcStat } from '../../../bench/proc.js';
import { checkSanity } from '../../../bench/sanity.js';
import { parseWrkOutput, wrkDurationMs } from '../../../bench/wrk.js';

const WRK_OK = `Running 5s test @ http://127.0.0.1:18999/l1
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.07ms  420.82us  12.13ms   93.35%
    Req/Sec    20.89k     1.02k   22.11k    80.00%
  Latency Distribution
     50%  812.00us
     75%    3.12ms
     90%    3.32ms
     99%    1.02s
  103925 requests in 5.00s, 14.96MB read
Requests/sec:  20780.44
Transfer/sec:      2.99MB
`;

const WRK_ERRORS = `Running 2s test @ http://127.0.0.1:18999/x
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    56.11ms   80.01ms 313.18ms   83.95%
    Req/Sec   584.86    525.76     1.42k    71.43%
  Latency Distribution
     50%   14.93ms
     75%   76.77ms
     90%  178.08ms
     99%  312.33ms
  506 requests in 2.05s, 78.07KB read
  Socket errors: connect 0, read 3, write 1, timeout 2
  Non-2xx or 3xx responses: 120
Requests/sec:    246.83
Transfer/sec:     38.08KB
`;

describe('bench: wrk output', () => {
  it('reads requests per second, the latency distribution in ms, and the requests and seconds of the run', () => {
    const r = parseWrkOutput(WRK_OK);
    expect(r.rps).to.equal(20780.44);
    expect(r.p50).to.be.closeTo(0.812, 1e-9);
    expect(r.p75).to.equal(3.12);
    expect(r.p90).to.equal(3.32);
    expect(r.p99).to.equal(1020);
    expect(r.requests).to.equal(103_925);
    expect(r.seconds).to.equal(5);
    expect(r.non2xx).to.equal(0);
    expect(r.socketErrors).to.equal(0);
  });

  it('counts answers other than 2xx/3xx and socket errors apart', () => {
    const r = parseWrkOutput(WRK_ERRORS);
    expect(r.requests).to.equal(506);
    expect(r.seconds).to.equal(2.05);
    expect(r.non2xx).to.equal(120);
    expect(r.socketErrors).to.equal(6);
  });

  it('refuses output that is not a finished run, or one without --latency', () => {
    expect(() => parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused\n')).to.throw(/did not finish/);
    const noLatency = WRK_OK.replace(/ {2}Latency Distribution[\s\S]*?99%.*\n/, '');
    expect(() => parseWrkOutput(noLatency)).to.throw(/--latency/);
  });

  it('reads every unit wrk prints durations in', () => {
    expect(wrkDurationMs('250.00us')).to.be.closeTo(0.25, 1e-9);
    expect(wrkDurationMs('3.07ms')).to.equal(3.07);
    expect(wrkDurationMs('1.50s')).to.equal(1500);
    expect(wrkDurationMs('2.00m')).to.equal(120_000);
    expect(wrkDurationMs('fast')).to.equal(undefined);
  });
});

describe('bench: /proc CPU accounting', () => {
  it('reads pid, parent and the four time fields, whatever the command name holds', () => {
    const line =
      '4242 (node (worker) x) S 4200 4242 8272 0 -1 4194304 99 0 0 0 1500 250 30 7 20 0 11 0 50164 3133440 380 18446744073709551615 1 2 3';
    expect(parseProcStat(line)).to.deep.equal({ pid: 4242, ppid: 4200, utime: 1500, stime: 250, cutime: 30, cstime: 7 });
    expect(parseProcStat('')).to.equal(undefined);
    expect(parseProcStat('12 (short) R 1 2')).to.equal(undefined);
  });

  it('sums a process and its descendants (reaped children included), not its siblings or parent', () => {
    const p = (pid: number, ppid: number, utime: number, stime = 0, cutime = 0, cstime = 0): ProcStat => ({
      pid,
      ppid,
      utime,
      stime,
      cutime,
      cstime,
    });
    const stats = [
      p(1, 0, 1000), // init
      p(10, 1, 100, 50, 5, 5), // the target (nginx master): a reaped worker's 10 ticks in cutime/cstime
      p(11, 10, 300, 100), // a worker
      p(12, 10, 200, 20), // another
      p(13, 12, 7), // a worker's own child
      p(20, 1, 999), // a sibling: not counted
    ];
    expect(treeTicks(stats, 10)).to.equal(160 + 400 + 220 + 7);
    expect(treeTicks(stats, 13)).to.equal(7);
    expect(treeTicks(stats, 99)).to.equal(undefined);
  });
});

describe('bench: sanity check', () => {
  const proxies = [
    { target: 'bare proxy', rps: 10_000 },
    { target: 'noderouter, 1 key', rps: 8000 },
  ];

  it('passes when upstream direct is at least 1.5× the fastest proxy', () => {
    const v = checkSanity({ target: 'upstream direct', rps: 15_000 }, proxies);
    expect(v.ok).to.equal(true);
    expect(v.ratio).to.equal(1.5);
    expect(v.message)
      .to.match(/^sanity: ok/)
      .and.to.include('bare proxy');
  });

  it('fails, naming the fastest proxy and the ratio, when upstream direct is not well above it', () => {
    const v = checkSanity({ target: 'upstream direct', rps: 14_900 }, proxies);
    expect(v.ok).to.equal(false);
    expect(v.ratio).to.be.closeTo(1.49, 1e-9);
    expect(v.message)
      .to.match(/^sanity: FAILED/)
      .and.to.include('bare proxy, 10000 req/s')
      .and.to.include('load generator');
  });

  it('fails when the load generator used (nearly) all of its core, whatever the ratio', () => {
    const v = checkSanity({ target: 'upstream direct', rps: 20_000, loadCpu: 0.97 }, proxies);
    expect(v.ok).to.equal(false);
    expect(v.message).to.include('load generator was saturated, the load generator at 97% of its core');
    expect(checkSanity({ target: 'upstream direct', rps: 20_000, loadCpu: 0.45 }, proxies).ok).to.equal(true);
  });

  it('says when the ratio is short though the load generator kept up (the machine was busy)', () => {
    const v = checkSanity({ target: 'upstream direct', rps: 11_000, loadCpu: 0.08 }, proxies);
    expect(v.ok).to.equal(false);
    expect(v.message).to.include('not saturated, the load generator at 8% of its core').and.to.include('other work on this machine');
  });

  it('fails when there is nothing to compare', () => {
    expect(checkSanity(undefined, proxies).ok).to.equal(false);
    expect(checkSanity({ target: 'upstream direct', rps: 15_000 }, []).ok).to.equal(false);
  });

  it('takes another threshold', () => {
    expect(checkSanity({ target: 'upstream direct', rps: 12_000 }, proxies, 1.2).ok).to.equal(true);
  });
});
