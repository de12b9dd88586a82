// The container image (Dockerfile) as an operator runs it: built beforehand (.ci/run;
// NODEROUTER_IMAGE names it), started with its own config next to a devnet container
// on a network of the test's own, ports published on 127.0.0.1. It runs as a non-root
// user, answers /health/ready, serves a key made by the CLI inside it, and drains on
// `podman stop` under a short load: readiness 503 first, every call sent and the call in
// flight answered, exit code 0.

import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { IMAGE, command, hostPort, logsOf, podman, requireContainers } from '../support/podman.js';
import { until } from '../support/until.js';

const BALANCE = '{"jsonrpc":"2.0","id":7,"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000001","latest"]}';
const BLOCK = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}';
const L1_NODES = ['l1-full-1', 'l1-full-2', 'l1-archive-1'];

describe('container image', function () {
  // Workers start in a few seconds; under a loaded machine more.
  this.timeout(120_000);
  const tag = `nrtest-${process.pid}-${Date.now().toString(36)}`;
  const [network, gateway, devnet] = [tag, `${tag}-gw`, `${tag}-devnet`];
  let traffic = '';
  let admin = '';
  let control = '';
  let started = false;

  before(async function () {
    await requireContainers(this);
    started = true;
    await podman('network', 'create', network);
    await podman(
      'run',
      '-d',
      '--name',
      devnet,
      '--network',
      network,
      '--network-alias',
      'devnet',
      '-p',
      '127.0.0.1::18500',
      IMAGE,
      'devnet',
    );
    // A 1 s readiness delay instead of 5 s keeps the drain test short; the rest is the image's config.
    await podman(
      ...['run', '-d', '--name', gateway, '--network', network, '-e', 'SHUTDOWN_DELAY_MS=1000'],
      ...['-p', '127.0.0.1::8080', '-p', '127.0.0.1::8081', IMAGE],
    );
    traffic = `http://127.0.0.1:${await hostPort(gateway, 8080)}`;
    admin = `http://127.0.0.1:${await hostPort(gateway, 8081)}`;
    control = `http://127.0.0.1:${await hostPort(devnet, 18500)}`;
    const ready = async (): Promise<boolean> => (await fetch(`${admin}/health/ready`).catch(() => undefined))?.status === 200;
    await until(ready, { what: `${gateway} answers /health/ready 200`, timeoutMs: 60_000, everyMs: 200 }).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await logsOf(gateway)}`);
    });
  });

  after(async () => {
    if (!started) return;
    // -v: the anonymous volume of /app/data goes with its container.
    await command('podman', ['rm', '-f', '-v', '-t', '0', gateway, devnet]);
    await command('podman', ['network', 'rm', '-f', network]);
  });

  it('runs as the non-root user node, labelled, with its health check on /health/ready', async () => {
    expect(await podman('inspect', '--format', '{{.Config.User}}', gateway)).to.equal('node');
    // PID 1 (the gateway's primary) and the user a command inside gets.
    expect(await podman('exec', gateway, 'stat', '-c', '%u:%g', '/proc/1')).to.equal('1000:1000');
    expect(await podman('exec', gateway, 'id', '-u')).to.equal('1000');
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    const labels = JSON.parse(await podman('image', 'inspect', '--format', '{{json .Labels}}', IMAGE)) as Record<string, string>;
    expect(labels['org.opencontainers.image.title']).to.equal('noderouter');
    expect(labels['org.opencontainers.image.version']).to.equal(version);
    expect(labels['org.opencontainers.image.licenses']).to.equal('MIT');
    const check = JSON.parse(await podman('image', 'inspect', '--format', '{{json .Config.Healthcheck}}', IMAGE)) as { Test: string[] };
    expect(check.Test.join(' ')).to.include('/health/ready');
    // The image's own check, run now (podman schedules it with systemd timers, absent here).
    expect((await command('podman', ['healthcheck', 'run', gateway])).code).to.equal(0);
    const ready = (await (await fetch(`${admin}/health/ready`)).json()) as { status: string; store: { record: string; hot: string } };
    expect(ready).to.deep.include({ status: 'ready' });
    expect(ready.store).to.deep.include({ record: 'sqlite', hot: 'memory' });
  });

  it('a key made with the CLI inside the container calls the devnet container through the gateway', async () => {
    const key = await newKey();
    const res = await call(key, '{"jsonrpc":"2.0","id":1,"method":"evm_blockNumber"}');
    expect(res.status).to.equal(200);
    const body = (await res.json()) as { id: number; result: string };
    expect(body.id).to.equal(1);
    // The devnet's l1 starts at height 1000 and mines a block a second.
    expect(Number.parseInt(body.result, 16)).to.be.at.least(1000);
    const none = await fetch(`${traffic}/l1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BALANCE });
    expect(none.status).to.equal(401);
  });

  it('podman stop under a short load drains: readiness 503 first, every call sent answered, exit code 0 within the grace', async () => {
    const key = await newKey();
    // The l1 nodes hold their answers until the fault is cleared: a call stays in flight.
    for (const n of L1_NODES) await fault(n, 'PUT', '{"hold":true}');
    const inFlight = call(key, BALANCE);
    await until(async () => /noderouter_requests_in_flight\{chain="l1"\} [1-9]/.test(await (await fetch(`${admin}/metrics`)).text()), {
      what: 'the call is in flight',
      timeoutMs: 15_000,
      everyMs: 50,
    });
    // A short load on another chain, sent as a load balancer sends it: until readiness says
    // 503. Every call sent must be answered, through the stop.
    let draining = false;
    const statuses: number[] = [];
    const lost: string[] = [];
    const client = async (): Promise<void> => {
      while (!draining) {
        await fetch(`${traffic}/l2-rollup`, { method: 'POST', headers: { apikey: key, 'content-type': 'application/json' }, body: BLOCK })
          .then(async (r) => {
            statuses.push(r.status);
            await r.arrayBuffer();
          })
          .catch((err: Error) => lost.push(String((err.cause as Error | undefined)?.message ?? err.message)));
      }
    };
    const load = Array.from({ length: 4 }, client);
    await until(() => statuses.length >= 20, { what: 'the load runs', timeoutMs: 15_000 });
    const stop = command('podman', ['stop', '-t', '25', gateway], {}, 60_000);
    await until(async () => (await fetch(`${admin}/health/ready`).catch(() => undefined))?.status === 503, {
      what: 'readiness answers 503',
      timeoutMs: 10_000,
      everyMs: 20,
    });
    draining = true;
    await Promise.all(load);
    expect(lost, 'calls sent and not answered').to.deep.equal([]);
    // Answered, or refused by the key's tier under this load: never a failure.
    expect(statuses.filter((st) => st !== 200 && st !== 429)).to.deep.equal([]);
    for (const n of L1_NODES) await fault(n, 'DELETE');
    const res = await inFlight;
    expect(res.status).to.equal(200);
    expect(((await res.json()) as { id: number; result: string }).result).to.match(/^0x[0-9a-f]+$/);
    const stopped = await stop;
    expect(stopped.code, stopped.stderr).to.equal(0);
    const [exitCode, oomKilled] = (await podman('inspect', '--format', '{{.State.ExitCode}} {{.State.OOMKilled}}', gateway)).split(' ');
    // 137 would be the SIGKILL at the end of the 25 s grace.
    expect(exitCode, await logsOf(gateway)).to.equal('0');
    expect(oomKilled).to.equal('false');
    expect(await logsOf(gateway, 5)).to.match(/"msg":"gateway stopped"/);
  });

  async function newKey(): Promise<string> {
    const out = await podman('exec', gateway, 'noderouter', 'keys', 'create', '--account', 'container-test', '--tier', 'growth');
    const key = out.split('\n').at(-1) ?? '';
    expect(key).to.match(/^nrk_/);
    // Workers learn of a new key from the record's change log, within a second.
    await until(async () => (await call(key, '{"jsonrpc":"2.0","id":0,"method":"eth_chainId"}')).status === 200, {
      what: 'the new key is served',
      timeoutMs: 10_000,
      everyMs: 100,
    });
    return key;
  }

  function call(key: string, body: string): Promise<Response> {
    return fetch(`${traffic}/l1`, { method: 'POST', headers: { apikey: key, 'content-type': 'application/json' }, body });
  }

  async function fault(node: string, method: 'PUT' | 'DELETE', body?: string): Promise<void> {
    const res = await fetch(`${control}/nodes/${node}/faults`, { method, headers: { 'content-type': 'application/json' }, body });
    expect(res.status, await res.text()).to.equal(200);
  }
});
