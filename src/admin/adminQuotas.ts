/**
 * The admin quota API, on the admin listener only (docs/quotas.md):
 *   GET  /admin/v1/quotas/{subject}   the partner's counters in use, per policy (and route
 *                                     for `per: client-route` policies): limit, remaining,
 *                                     seconds until reset (`portaria quota show`)
 *   DELETE /admin/v1/quotas/{subject} forgets them: full buckets, unused windows
 *                                     (`portaria quota reset`)
 * The subject is what the policies key by: the client id, or the claim's value. Order as
 * the revocation API's: off (no admin token, or no policy: 404) → the admin token (401)
 * → method (405) → subject (400). The store not answering is 503, never a hang.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PortariaError } from '../errors.js';
import { instanceOf, sendJson, sendRefusal } from '../http/replies.js';
import { ADMIN_CHALLENGE, authenticate } from './adminRevocations.js';

export const QUOTAS_PATH = '/admin/v1/quotas/';
const ALLOW = 'GET, HEAD, DELETE';
const NO_STORE = { 'cache-control': 'no-store' } as const;
/** A subject as a token can carry it: 1–256 visible ASCII characters once percent-decoded. */
const SUBJECT = /^[\x21-\x7E]{1,256}$/;

/** One counter in use: a policy's for the subject (and a route, per route). */
export interface QuotaUsage {
  readonly policy: string;
  readonly route: string | null;
  readonly rate: {
    readonly limit: number;
    readonly remaining: number;
    readonly resetSeconds: number;
  } | null;
  readonly quota: {
    readonly limit: number;
    readonly remaining: number;
    readonly resetSeconds: number;
    readonly windowSeconds: number;
  } | null;
}

export interface QuotaAdminDeps {
  /** The admin API token; null (or empty): the API is off. */
  readonly adminToken: string | null;
  /** The subject's counters in use; rejects with a PortariaError (503) when the store cannot answer. */
  usage(subject: string): Promise<readonly QuotaUsage[]>;
  /** Forgets the subject's counters; resolves with how many (policy, route) counters were reset. */
  reset(subject: string): Promise<number>;
  readonly audit?: (level: 'info' | 'warn', event: string, detail: Record<string, unknown>) => void;
}

export async function handleQuotas(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  deps: QuotaAdminDeps | undefined,
  problemTypeBase: string,
): Promise<void> {
  const instance = instanceOf(QUOTAS_PATH, 'admin');
  try {
    if (deps === undefined || deps.adminToken === null || deps.adminToken === '') {
      throw new PortariaError('not-found', 'The quota API is off (no admin token or no policy).', {
        reason: 'admin-api-off',
      });
    }
    authenticate(req, deps.adminToken);
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD' && method !== 'DELETE') {
      throw new PortariaError(
        'method-not-allowed',
        'The quotas endpoint accepts GET, HEAD and DELETE.',
        {
          reason: 'method',
          headers: { allow: ALLOW },
        },
      );
    }
    const subject = subjectOf(path);
    if (method === 'DELETE') {
      const reset = await deps.reset(subject);
      deps.audit?.('info', 'quota counters reset', {
        subject,
        counters: reset,
        from: req.socket.remoteAddress,
      });
      return sendJson(res, 200, JSON.stringify({ subject, reset }), NO_STORE);
    }
    const usage = await deps.usage(subject);
    sendJson(res, 200, JSON.stringify({ subject, counters: usage }), NO_STORE, method === 'HEAD');
  } catch (error) {
    if (!(error instanceof PortariaError)) throw error;
    if (error.status === 401) {
      deps?.audit?.('warn', 'admin token refused', {
        reason: error.reason,
        from: req.socket.remoteAddress,
      });
    }
    sendRefusal(res, error, problemTypeBase, instance, {
      challenge: error.status === 401 ? ADMIN_CHALLENGE : undefined,
    });
  }
}

function subjectOf(path: string): string {
  let subject: string;
  try {
    subject = decodeURIComponent(path.slice(QUOTAS_PATH.length));
  } catch {
    subject = '';
  }
  if (!SUBJECT.test(subject)) {
    throw new PortariaError(
      'invalid-request',
      'The path must name a subject: 1 to 256 visible ASCII characters (percent-encoded).',
      { reason: 'invalid-request' },
    );
  }
  return subject;
}
