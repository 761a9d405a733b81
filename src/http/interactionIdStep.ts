/**
 * `x-fapi-interaction-id` under `profile: fapi-br` (FAPI 1.0 Part 1 §6.2.1 items 11–13):
 * the opening step keeps the client's value when it is a UUID in RFC 4122 text form,
 * generates one when none came, and refuses anything else with 400 (naming the header).
 * Every answer of the HTTP entry echoes the scope's value (`echoInteractionId`, a
 * refusal's too: a malformed value is answered with a fresh one, never echoed), the
 * forwarder sends it upstream (`proxy/headers.ts`), and the access line records it.
 *
 * Node joins repeated lines of an unknown field with `, `: two values read as one that
 * is not a UUID, and are refused.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { PortariaError } from '../errors.js';
import type { OpeningStep } from './openingSteps.js';
import type { GatewayResponse } from './requestScope.js';

export const INTERACTION_ID = 'x-fapi-interaction-id';

/** RFC 4122 §3: 8-4-4-4-12 hexadecimal digits, either case. */
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

export const interactionIdStep: OpeningStep = (req, scope) => {
  const value = req.headers[INTERACTION_ID];
  if (typeof value === 'string' && UUID.test(value)) {
    scope.interactionId = value;
    return;
  }
  scope.interactionId = randomUUID();
  if (value === undefined) return;
  throw new PortariaError(
    'invalid-request',
    `The ${INTERACTION_ID} header must be a UUID (RFC 4122), or absent.`,
    { reason: 'interaction-id-malformed' },
  );
};

/** Sets the scope's interaction id on an answer not yet sent; nothing without the profile. */
export function echoInteractionId(res: GatewayResponse | ServerResponse): void {
  const id = (res as GatewayResponse).scope?.interactionId;
  if (id !== undefined && !res.headersSent) res.setHeader(INTERACTION_ID, id);
}
