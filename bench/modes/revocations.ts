/**
 * Mode `revocations`: requests/s at 0, 10,000, 100,000 and 1,000,000 revocation entries
 * (`--counts`), one gateway each, measured in the same rounds. The entries — half token
 * ids (`jti`), half client cut-offs for other clients, all live for an hour — are written
 * into each gateway's local revocation log before it starts, in the store's own line
 * format, and loaded by it at start. The measured token is not revoked, so every request
 * pays the full lookup. Verdict: flat within ±10 % of the empty list.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { encodeRevocationRecord } from '../../src/revocation/revocationLogRecord.js';
import { intList, parseModeArgs, TIMING_OPTIONS, timingOf } from '../lib/modeArgs.js';
import { runScale, type Variant } from '../lib/scale.js';

const PATH = '/v1/orders/42';

async function writeRevocations(file: string, count: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const out = createWriteStream(file);
  const now = Math.floor(Date.now() / 1000);
  const expiresAt = now + 3600;
  const prefix = randomBytes(6).toString('base64url');
  for (let i = 0; i < count; i++) {
    const line =
      i % 2 === 0
        ? encodeRevocationRecord({ kind: 'token', tokenId: `${prefix}-jti-${i}`, expiresAt })
        : encodeRevocationRecord({
            kind: 'client',
            clientId: `other-client-${i}`,
            issuedBefore: now,
            expiresAt,
          });
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await finished(out);
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    ...TIMING_OPTIONS,
    counts: { type: 'string', default: '0,10000,100000,1000000' },
  });
  const variants: Variant[] = intList(values, 'counts').map((count) => ({
    label: `${count.toLocaleString('en')} revocation entries`,
    overrides: async (dir) => {
      const file = join(dir, 'revocations.log');
      await writeRevocations(file, count);
      return { revocation: { store: 'local', file } };
    },
    check: (metrics) =>
      `the gateway reports ${/^portaria_revocation_entries(?:\{[^}]*\})? (\S+)$/m.exec(metrics)?.[1] ?? 'no'} entries (portaria_revocation_entries)`,
  }));
  return runScale('revocations', PATH, variants, timingOf(values));
}
