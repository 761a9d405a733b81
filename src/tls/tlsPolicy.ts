/**
 * The handshake parameters of `server.tls.policy`:
 *
 *   default  Node's cipher suites and groups; TLS 1.3 preferred (OpenSSL offers the
 *            highest version both sides speak); TLS 1.2 with Node's list (ECDHE and DHE
 *            with AES-GCM first).
 *   fapi     FAPI 1.0 Advanced §8.5: below TLS 1.3, only the four suites it permits
 *            (the RFC 7525 §4.2 recommendations), which are all RSA-authenticated, so
 *            TLS 1.2 needs an RSA server key; TLS 1.3 as by default (the profile sets no
 *            limit there). DHE needs parameters: OpenSSL's built-in RFC 7919 groups.
 *
 * Either way the minimum is `server.tls.minVersion` (TLS 1.2 at least: RFC 8996 retired
 * 1.0 and 1.1) and the server's order wins, so a client offering a weaker suite first
 * still gets the best one both support.
 */
import type { SecureContextOptions } from 'node:tls';
import type { ServerTlsConfig } from '../config/types.js';

/** FAPI 1.0 Advanced §8.5's TLS 1.2 suites, IANA names → OpenSSL names. */
export const FAPI_TLS12_SUITES: Readonly<Record<string, string>> = {
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_DHE_RSA_WITH_AES_128_GCM_SHA256: 'DHE-RSA-AES128-GCM-SHA256',
  TLS_DHE_RSA_WITH_AES_256_GCM_SHA384: 'DHE-RSA-AES256-GCM-SHA384',
};

/** TLS 1.3's suites (RFC 8446 §B.4), Node's default order. */
const TLS13_SUITES = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
];

export type PolicyOptions = Pick<
  SecureContextOptions,
  'minVersion' | 'ciphers' | 'honorCipherOrder' | 'dhparam'
>;

export function policyOptions(tls: Pick<ServerTlsConfig, 'minVersion' | 'policy'>): PolicyOptions {
  if (tls.policy === 'default') return { minVersion: tls.minVersion, honorCipherOrder: true };
  return {
    minVersion: tls.minVersion,
    ciphers: [...TLS13_SUITES, ...Object.values(FAPI_TLS12_SUITES)].join(':'),
    honorCipherOrder: true,
    dhparam: 'auto',
  };
}

/** Whether the policy's TLS 1.2 suites need an RSA server key (fapi with TLS 1.2 allowed). */
export function needsRsaKey(tls: Pick<ServerTlsConfig, 'minVersion' | 'policy'>): boolean {
  return tls.policy === 'fapi' && tls.minVersion === 'TLSv1.2';
}
