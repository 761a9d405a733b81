import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  generateSecret,
  hashChosenSecret,
  hashGeneratedSecret,
  type ParsedHash,
  parseSecretHash,
  verifySecret,
} from '../../src/clients/secretHash.js';

const B64URL_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function parsed(text: string): ParsedHash {
  const hash = parseSecretHash(text);
  assert.ok(hash, `expected ${text} to parse`);
  return hash;
}

describe('generateSecret', () => {
  test('returns 43 base64url characters encoding 32 random bytes', () => {
    const secret = generateSecret();
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(secret, 'base64url').length, 32);
  });

  test('returns a different secret on every call', () => {
    const secrets = new Set(Array.from({ length: 50 }, generateSecret));
    assert.equal(secrets.size, 50);
  });
});

describe('sha256 hashes', () => {
  test('are the base64url SHA-256 of the secret', () => {
    assert.equal(hashGeneratedSecret('abc'), 'sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
  });

  test('verify the secret they were made from and nothing else', async () => {
    const secret = generateSecret();
    const hash = parsed(hashGeneratedSecret(secret));
    assert.equal(await verifySecret(secret, hash), true);
    assert.equal(await verifySecret(`${secret}x`, hash), false);
    assert.equal(await verifySecret('', hash), false);
  });
});

describe('scrypt hashes', () => {
  test('carry the default parameters, a 16-byte salt and a 32-byte key', async () => {
    const text = await hashChosenSecret('correct horse battery staple');
    assert.match(text, /^scrypt:16384:8:1:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]{43}$/);
    const hash = parsed(text);
    assert.equal(hash.scheme, 'scrypt');
    assert.deepEqual(hash.scheme === 'scrypt' && [hash.N, hash.r, hash.p], [16384, 8, 1]);
  });

  test('use a fresh salt for every hash of the same secret', async () => {
    const a = await hashChosenSecret('correct horse battery staple');
    const b = await hashChosenSecret('correct horse battery staple');
    assert.notEqual(a, b);
  });

  test('verify the secret they were made from and nothing else', async () => {
    const hash = parsed(await hashChosenSecret('correct horse battery staple'));
    assert.equal(await verifySecret('correct horse battery staple', hash), true);
    assert.equal(await verifySecret('correct horse battery stapl', hash), false);
  });

  test('verification matches the RFC 7914 §12 test vector', async () => {
    const hash: ParsedHash = {
      scheme: 'scrypt',
      N: 1024,
      r: 8,
      p: 16,
      salt: Buffer.from('NaCl'),
      digest: Buffer.from(
        'fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640',
        'hex',
      ),
    };
    assert.equal(await verifySecret('password', hash), true);
    assert.equal(await verifySecret('passwore', hash), false);
  });
});

describe('parseSecretHash', () => {
  const digest = createHash('sha256').update('x').digest('base64url');
  const salt = Buffer.alloc(16, 1).toString('base64url');
  const key = Buffer.alloc(32, 2).toString('base64url');
  // A 43-character encoding whose last character carries non-zero unused bits: it decodes
  // to the same bytes as the canonical text, so accepting it would make hashes ambiguous.
  const canonicalLast = digest.at(-1) ?? '';
  const nonCanonical = `${digest.slice(0, -1)}${B64URL_ALPHABET[B64URL_ALPHABET.indexOf(canonicalLast) + 1]}`;

  test('accepts a canonical sha256 hash', () => {
    const hash = parsed(`sha256:${digest}`);
    assert.equal(hash.scheme, 'sha256');
    assert.equal(hash.digest.toString('base64url'), digest);
  });

  test('accepts scrypt parameters within bounds', () => {
    assert.ok(parseSecretHash(`scrypt:1024:1:1:${salt}:${key}`));
    assert.ok(parseSecretHash(`scrypt:131072:8:1:${salt}:${key}`));
  });

  const rejected: [string, string][] = [
    ['empty text', ''],
    ['a scheme without value', 'sha256:'],
    ['an unknown scheme', `md5:${digest}`],
    ['an upper-case scheme', `SHA256:${digest}`],
    ['a short sha256 digest', `sha256:${digest.slice(0, 42)}`],
    ['padding characters', `sha256:${digest}=`],
    ['standard base64 characters', `sha256:${digest.slice(0, 42)}+`],
    ['non-canonical base64url', `sha256:${nonCanonical}`],
    ['an extra field', `sha256:${digest}:x`],
    ['N not a power of two', `scrypt:16383:8:1:${salt}:${key}`],
    ['N below 1024', `scrypt:512:8:1:${salt}:${key}`],
    ['N above 2^20', `scrypt:2097152:8:1:${salt}:${key}`],
    ['memory above 256 MiB', `scrypt:1048576:8:1:${salt}:${key}`],
    ['r of zero', `scrypt:16384:0:1:${salt}:${key}`],
    ['r above 32', `scrypt:16384:33:1:${salt}:${key}`],
    ['p above 16', `scrypt:16384:8:17:${salt}:${key}`],
    ['a leading zero', `scrypt:016384:8:1:${salt}:${key}`],
    ['a salt under 16 bytes', `scrypt:16384:8:1:${Buffer.alloc(15).toString('base64url')}:${key}`],
    ['a key under 32 bytes', `scrypt:16384:8:1:${salt}:${Buffer.alloc(31).toString('base64url')}`],
    ['a missing scrypt field', `scrypt:16384:8:${salt}:${key}`],
  ];
  for (const [name, text] of rejected) {
    test(`rejects ${name}`, () => {
      assert.equal(parseSecretHash(text), null);
    });
  }
});
