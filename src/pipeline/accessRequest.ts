/**
 * The plain per-request value the protected steps read and fill. An entry builds it
 * from whatever it holds — an HTTP request, a WebSocket upgrade, a decision-only request
 * whose original method and URI arrive in headers or in a gRPC message — after its own
 * opening steps; the steps never see the entry's objects. The public listener's request
 * scope is such a value (`http/requestScope.ts`), so a request allocates no second one.
 */
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { Principal } from '../domain/principal.js';
import type { RequestTarget } from '../domain/requestPath.js';
import type { MethodClass } from '../observability/metrics.js';
import type { RequestTrace } from '../observability/tracing.js';
import type { CompiledRoute } from '../proxy/routeTable.js';
import type { QuotaDecision } from './meteringPolicies.js';

/** An authorization scheme the edge accepts (lower case, RFC 9110 §11.1: case-insensitive). */
export type AuthScheme = 'bearer' | 'dpop';

export interface AccessRequest {
  // What the entry presents.
  /** The request method as received (the original request's, for a decision). */
  readonly method: string;
  /** Its class for the revocation freshness policy: `safe`, or `unsafe` (an upgrade too). */
  readonly methodClass: MethodClass;
  /** The canonical target (the path opening step). */
  readonly target: RequestTarget | null;
  /** The first `Authorization` value, and how many `Authorization` lines came. */
  readonly authorization: string | undefined;
  readonly authorizationLines: number;
  /** The request's trace, when tracing is on. */
  readonly trace: RequestTrace | null;
  /** The client certificate (over TLS, or from a trusted proxy's header); null: none. */
  readonly certificate: ClientCertificate | null;
  /** The first `DPoP` proof header (RFC 9449 §4.1), and how many `DPoP` lines came. */
  readonly dpopProof: string | undefined;
  readonly dpopProofLines: number;
  /**
   * `scheme://host` as the client used it (the trusted proxy's `X-Forwarded-Proto/-Host`,
   * else the listener's scheme and `Host`): a DPoP proof's `htu` names it. Read only
   * when a proof came.
   */
  readonly origin: string;
  /**
   * The proxy asks again about a request it was refused a moment ago, for the refusal's
   * answer (nginx's `error_page`, docs/authorizer.md): no quota is consumed, a proof its
   * first ask spent is not refused before the later steps, and it is never allowed.
   */
  readonly secondAsk: boolean;

  // What the steps find.
  /** The scheme of the accepted credentials (credentials step). */
  scheme: AuthScheme | undefined;
  /** The presented access token (credentials step). */
  token: string;
  /** The verified token's principal (verification step). */
  principal: Principal | null;
  /** The token is bound to the certificate presented (certificate binding step). */
  bound: boolean;
  /** The token is DPoP-bound and this request's proof holds its key (DPoP step). */
  proven: boolean;
  /** A second ask's proof was used before (DPoP step): its answer if no later step refuses. */
  proofSpent: boolean;
  /** Its client id: the access line's and the decision's. */
  clientId: string | undefined;
  /** The route serving the path (route step), and its bounded label. */
  route: CompiledRoute | null;
  routeId: string;
  /** The quota step's decision on a metered request; null: not metered (yet). */
  quota: QuotaDecision | null;
}
