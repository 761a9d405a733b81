import assert from 'node:assert/strict';
import { once } from 'node:events';
import net, { type Socket } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { writeSocketProblem } from '../../src/proxy/socketProblem.js';

/** A connected pair: the server side (where the gateway writes) and the raw bytes read by the client. */
async function socketPair(t: TestContext): Promise<{ server: Socket; received: Promise<string> }> {
  const listener = net.createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const accepted = once(listener, 'connection');
  const client = net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1');
  const [server] = (await accepted) as [Socket];
  t.after(() => {
    client.destroy();
    server.destroy();
    listener.close();
  });
  const received = new Promise<string>((resolve) => {
    let data = '';
    client.setEncoding('latin1');
    client.on('data', (chunk: string) => {
      data += chunk;
    });
    client.on('close', () => resolve(data));
  });
  return { server, received };
}

describe('writeSocketProblem', () => {
  test('writes an HTTP/1.1 problem-details response with its extra headers, then closes', async (t) => {
    const { server, received } = await socketPair(t);
    const error = new PortariaError('token-missing', 'No bearer token.', {
      headers: { 'WWW-Authenticate': 'Bearer realm="portaria"' },
    });

    writeSocketProblem(server, error, '/v1/live#req-7', 'urn:portaria:problem:');

    const body =
      '{"tipo":"urn:portaria:problem:token-missing","titulo":"Access token missing",' +
      '"status":401,"detalhe":"No bearer token.","instancia":"/v1/live#req-7"}';
    assert.equal(
      await received,
      'HTTP/1.1 401 Unauthorized\r\n' +
        'content-type: application/problem+json\r\n' +
        'cache-control: no-store\r\n' +
        'x-content-type-options: nosniff\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        'connection: close\r\n' +
        'WWW-Authenticate: Bearer realm="portaria"\r\n' +
        `\r\n${body}`,
    );
  });

  test('a socket that already carried bytes is destroyed without another response', async (t) => {
    const { server, received } = await socketPair(t);
    server.write('HTTP/1.1 101 Switching Protocols\r\n\r\n');

    writeSocketProblem(
      server,
      new PortariaError('upstream-unavailable', 'Gone.'),
      '/v1/live#req-8',
      'urn:portaria:problem:',
    );

    assert.equal(await received, 'HTTP/1.1 101 Switching Protocols\r\n\r\n');
    assert.equal(server.destroyed, true);
  });
});
