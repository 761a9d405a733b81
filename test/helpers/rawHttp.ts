/** Sends bytes exactly as given over TCP and returns the raw response text (for framing and header tricks fetch cannot express). */
import { connect } from 'node:net';

export function rawRequest(
  url: string,
  payload: string | Buffer,
  timeoutMs = 5000,
): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      if (chunks.length > 0) resolve(Buffer.concat(chunks).toString('utf8'));
      else reject(e);
    });
    socket.write(payload);
  });
}

export function statusOf(raw: string): number {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(raw);
  return match ? Number(match[1]) : 0;
}

export function bodyOf(raw: string): string {
  const i = raw.indexOf('\r\n\r\n');
  return i === -1 ? '' : raw.slice(i + 4);
}
