/**
 * A rotation's guarantee — no verifier meets a token of the new key before its cached
 * JWKS holds it — needs every replica to publish the key at least `jwksMaxAge` before it
 * signs (`keys rotate` plans activateAt = publishAt + max-age + skew). It does not hold
 * when the directory reaches a replica late (a Secret synced after a review, a GitOps
 * delay, the kubelet's minute): this names the keys a reload brings in with less than the
 * max-age left before they may sign, so the replica can say so in its log.
 *
 * Late: a key this replica did not have before, pending or active now (it may sign), whose
 * activateAt is less than `jwksMaxAgeMs` after `now` (or has passed; a key without a
 * schedule entry is active since forever).
 */
import type { KeyRing, KeyState } from './keyRing.js';

export function latePublications(
  previous: KeyRing,
  next: KeyRing,
  now: number,
  jwksMaxAgeMs: number,
): KeyState[] {
  const known = new Set(previous.states().map((k) => k.kid));
  return next
    .states()
    .filter(
      (k) =>
        !known.has(k.kid) &&
        (k.state === 'pending' || k.state === 'active') &&
        (k.activateAt ?? 0) - now < jwksMaxAgeMs,
    );
}
