/**
 * The admin listener (default 127.0.0.1:9091), never reachable through the public port:
 *   GET /healthz  — 200 while the process runs (liveness);
 *   GET /readyz   — 200 once keys and clients are loaded and until shutdown begins,
 *                   503 otherwise (readiness: take me out of the load balancer); a ready
 *                   body may carry `degraded` (e.g. a stale Redis revocation list);
 *   GET /metrics  — Prometheus text exposition;
 *   /admin/v1/revocations — the revocation API behind the admin token (adminRevocations.ts);
 *   /admin/v1/quotas/{subject} — a partner's quota counters, read and reset (adminQuotas.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PortariaError } from '../errors.js';
import { reachesHeaderLines, tooManyHeaderLines } from '../http/framingChecks.js';
import { instanceOf, sendJson, sendRefusal, sendServerError } from '../http/replies.js';
import { handleQuotas, QUOTAS_PATH, type QuotaAdminDeps } from './adminQuotas.js';
import {
  handleRevocations,
  REVOCATIONS_PATH,
  type RevocationAdminDeps,
} from './adminRevocations.js';

export interface ReadyState {
  readonly ready: boolean;
  readonly reason?: string | undefined;
  readonly degraded?: string | undefined;
}

export interface AdminDeps {
  readonly metricsText: () => Promise<{ contentType: string; text: string }>;
  /** `degraded`: ready, but something to report (e.g. a stale revocation list). */
  readonly ready: () => ReadyState | Promise<ReadyState>;
  readonly problemTypeBase: string;
  /** `server.maxHeaderLines`: a request reaching it is refused (framingChecks.ts). */
  readonly maxHeaderLines: number;
  /** The revocation API; absent (or no admin token): it answers 404. */
  readonly revocations?: RevocationAdminDeps;
  /** The quota API; absent (no policy, or no admin token): it answers 404. */
  readonly quotas?: QuotaAdminDeps;
}

export function createAdminHandler(deps: AdminDeps) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handleAdmin(req, res, deps).catch(() => sendServerError(res));
  };
}

async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  deps: AdminDeps,
): Promise<void> {
  const path = (req.url ?? '').split('?')[0] ?? '';
  if (reachesHeaderLines(req, deps.maxHeaderLines)) {
    return sendRefusal(res, tooManyHeaderLines(), deps.problemTypeBase, instanceOf(path, 'admin'));
  }
  if (path === REVOCATIONS_PATH) {
    return handleRevocations(req, res, deps.revocations, deps.problemTypeBase);
  }
  if (path.startsWith(QUOTAS_PATH)) {
    return handleQuotas(req, res, path, deps.quotas, deps.problemTypeBase);
  }
  const known = path === '/healthz' || path === '/readyz' || path === '/metrics';
  if (!known) {
    const error = new PortariaError('not-found', 'No admin endpoint at this path.');
    return sendRefusal(res, error, deps.problemTypeBase, instanceOf(path, 'admin'));
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    const error = new PortariaError(
      'method-not-allowed',
      'Admin endpoints accept GET and HEAD only.',
      {
        headers: { allow: 'GET, HEAD' },
      },
    );
    return sendRefusal(res, error, deps.problemTypeBase, instanceOf(path, 'admin'));
  }
  const head = req.method === 'HEAD';
  const noStore = { 'cache-control': 'no-store' };
  if (path === '/healthz') return sendJson(res, 200, '{"status":"ok"}', noStore, head);
  if (path === '/readyz') {
    // A group's primary asks its workers (cluster/primaryReadiness.ts).
    const state = await deps.ready();
    const body = JSON.stringify(
      state.ready
        ? { status: 'ready', ...(state.degraded === undefined ? {} : { degraded: state.degraded }) }
        : { status: 'not ready', reason: state.reason },
    );
    return sendJson(res, state.ready ? 200 : 503, body, noStore, head);
  }
  const { contentType, text } = await deps.metricsText();
  res.statusCode = 200;
  res.setHeader('content-type', contentType);
  res.setHeader('cache-control', 'no-store');
  res.end(head ? undefined : text);
}
