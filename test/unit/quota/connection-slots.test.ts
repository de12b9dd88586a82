import { expect } from 'chai';
import { MemoryConnectionSlots } from '../../../src/quota/connection-slots.js';

describe('connection slots in memory', () => {
  it('holds each key to its cap and gives slots back', async () => {
    const slots = new MemoryConnectionSlots();
    expect(await slots.acquire('k1', 'a', 2)).to.equal(true);
    expect(await slots.acquire('k1', 'b', 2)).to.equal(true);
    expect(await slots.acquire('k1', 'c', 2)).to.equal(false);
    expect(await slots.acquire('k2', 'd', 2)).to.equal(true);
    slots.release('k1', 'a');
    expect(await slots.acquire('k1', 'c', 2)).to.equal(true);
    expect(await slots.acquire('k3', 'e', Infinity)).to.equal(true);
    slots.release('k9', 'nothing');
  });
});
