/**
 * The opening steps every entry of the public listener runs first, before it reads,
 * forwards or classifies anything (RFC 9112; `framingChecks.ts`, `singletonFields.ts`,
 * `domain/requestPath.ts`):
 *
 *   header lines     fewer than `server.maxHeaderLines` (431, connection closed)
 *   singleton fields one well-formed Host, at most one Content-Type; the Authorization
 *                    value and its line count into the scope (400)
 *   transfer coding  chunked only, never on HTTP/1.0 (501 / 400) — a request with a body
 *                    it may read; an upgrade refuses any body later (`checkUpgradeWithoutBody`)
 *   path             one canonical target into the scope, or 400 `invalid-path`
 *   certificate      with `clientCertificate.source` `tls`: the connection's client
 *                    certificate into the scope (`clientCertificateStep.ts`; 401 without a
 *                    verified one in `require` mode); `header`: the certificate from a
 *                    trusted proxy's header (`certificateHeaderStep.ts`; 400 malformed)
 *   dpop proof       with `dpop.enabled`: the `DPoP` header, its line count and the
 *                    client's origin into the scope (`dpopHeaderStep.ts`)
 *   interaction id   with `profile: fapi-br`, first of all: `x-fapi-interaction-id`, a
 *                    UUID or generated, into the scope (`interactionIdStep.ts`; 400
 *                    malformed), so that every answer, a refusal of the next steps too,
 *                    echoes it
 *
 * An entry runs one of the two lists; a refusal is thrown as a PortariaError.
 */
import type { IncomingMessage } from 'node:http';
import { parseRequestTarget } from '../domain/requestPath.js';
import { checkTransferCoding, reachesHeaderLines, tooManyHeaderLines } from './framingChecks.js';
import type { RequestScope } from './requestScope.js';
import { checkSingletonFieldsAndCountAuthorization } from './singletonFields.js';

export type OpeningStep = (req: IncomingMessage, scope: RequestScope) => void;

export function headerLines(maxHeaderLines: number): OpeningStep {
  return (req) => {
    if (reachesHeaderLines(req, maxHeaderLines)) throw tooManyHeaderLines();
  };
}

export const singletonFields: OpeningStep = (req, scope) => {
  scope.authorizationLines = checkSingletonFieldsAndCountAuthorization(req);
  scope.authorization = req.headers.authorization;
};

const transferCoding: OpeningStep = (req) => checkTransferCoding(req);

const path: OpeningStep = (req, scope) => {
  scope.target = parseRequestTarget(req.url ?? '');
};

export interface OpeningSteps {
  /** A request the gateway may answer, forward or read the body of. */
  readonly request: readonly OpeningStep[];
  /** A WebSocket upgrade. */
  readonly upgrade: readonly OpeningStep[];
}

/**
 * The two lists; `certificate` (a step or null) and `dpop` come last in both,
 * `interaction` first.
 */
export function openingSteps(
  maxHeaderLines: number,
  certificate: OpeningStep | null = null,
  interaction: OpeningStep | null = null,
  dpop: OpeningStep | null = null,
): OpeningSteps {
  const lines = headerLines(maxHeaderLines);
  const last = [...(certificate === null ? [] : [certificate]), ...(dpop === null ? [] : [dpop])];
  const first = interaction === null ? [] : [interaction];
  return {
    request: [...first, lines, singletonFields, transferCoding, path, ...last],
    upgrade: [...first, lines, singletonFields, path, ...last],
  };
}

export function runOpeningSteps(
  steps: readonly OpeningStep[],
  req: IncomingMessage,
  scope: RequestScope,
): void {
  for (const step of steps) step(req, scope);
}
