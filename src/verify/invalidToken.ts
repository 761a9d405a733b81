/**
 * The refusal of a token that cannot be accepted (401 `token-invalid`; the edge's
 * challenge says `invalid_token`, `http/challenge.ts`), and the longest token looked at.
 */
import { type FailureReason, PortariaError } from '../errors.js';

/** Larger tokens are refused before parsing; ours are well under 1 KiB. */
export const MAX_TOKEN_LENGTH = 8192;

export function invalid(reason: FailureReason, detail: string): PortariaError {
  return new PortariaError('token-invalid', detail, { reason });
}
