/**
 * One parsed scope set per distinct `scope` claim: the verified-token cache holds a
 * principal per token, and tokens of one client mostly carry the same scope string, so
 * their principals share one read-only set (and one copy of the string) instead of each
 * holding its own (a set of two scopes costs about 180 bytes).
 *
 * Bounded: a table that reaches `limit` distinct strings is emptied and starts again, so
 * tokens with ever-new scopes cost no more than without it.
 */
import { parseScope } from '../domain/scope.js';

export interface SharedScope {
  readonly text: string;
  readonly scopes: ReadonlySet<string>;
}

const EMPTY: SharedScope = Object.freeze({ text: '', scopes: new Set<string>() });

export class ScopeSets {
  readonly #limit: number;
  readonly #byText = new Map<string, SharedScope>();

  constructor(limit = 4096) {
    this.#limit = limit;
  }

  /** The shared text and set for `text`. */
  get(text: string): SharedScope {
    if (text === '') return EMPTY;
    let shared = this.#byText.get(text);
    if (shared === undefined) {
      if (this.#byText.size >= this.#limit) this.#byText.clear();
      shared = Object.freeze({ text, scopes: parseScope(text) });
      this.#byText.set(text, shared);
    }
    return shared;
  }

  get size(): number {
    return this.#byText.size;
  }
}
