// How node settings print: a URL with a path or query keeps only its origin, header
// values and any text quoting a node's secrets show REDACTED.

import { expect } from 'chai';
import { nodeSecrets, redactHeaders, redactUrl, scrub } from '../../../src/config/redact.js';

describe('redaction of node secrets', () => {
  it('keeps a bare origin and hides paths and queries', () => {
    expect(redactUrl('http://10.0.0.5:8545')).to.equal('http://10.0.0.5:8545');
    expect(redactUrl('https://eth.example.com/')).to.equal('https://eth.example.com');
    expect(redactUrl('https://eth.example.com/v2/abc123')).to.equal('https://eth.example.com/REDACTED');
    expect(redactUrl('wss://eth.example.com?key=abc')).to.equal('wss://eth.example.com/REDACTED');
    // Schemes without an origin of their own keep their host.
    expect(redactUrl('redis://127.0.0.1:6379')).to.equal('redis://127.0.0.1:6379');
    expect(redactUrl('redis://:secret@cache.internal:6379/2')).to.equal('redis://REDACTED@cache.internal:6379/REDACTED');
    expect(redactUrl('postgres://db.internal:5432/noderouter')).to.equal('postgres://db.internal:5432/REDACTED');
    expect(redactUrl('https://u:p@eth.example.com/x')).to.equal('https://REDACTED@eth.example.com/REDACTED');
    expect(redactUrl('not a url')).to.equal('REDACTED');
  });

  it('hides header values and scrubs secrets out of any text, longest first', () => {
    expect(redactHeaders({ authorization: 'Bearer t', 'x-api-key': 'k' })).to.deep.equal({
      authorization: 'REDACTED',
      'x-api-key': 'REDACTED',
    });
    const node = { url: 'https://h.example/v2/tok1?key=tok2', ws: 'wss://h.example/ws/tok3', headers: { authorization: 'Bearer tok4' } };
    const secrets = nodeSecrets(node);
    expect(secrets).to.include.members(['/v2/tok1', 'key=tok2', '/ws/tok3', 'Bearer tok4']);
    const text = 'Unexpected server response: 401 for wss://h.example/ws/tok3 (Bearer tok4) https://h.example/v2/tok1?key=tok2';
    const clean = scrub(text, secrets);
    for (const t of ['tok1', 'tok2', 'tok3', 'tok4']) expect(clean).to.not.contain(t);
    expect(clean).to.contain('wss://h.example');
  });
});
