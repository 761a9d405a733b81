/**
 * Questions sent over the IPC channel waiting for their answer: each gets an id, and
 * settles with the answer carrying that id, or with `undefined` after `timeoutMs` (the
 * other process died or hangs; the asker decides what that means).
 */
export class PendingAnswers {
  #next = 1;
  readonly #waiting = new Map<number, { done: (value: unknown) => void; timer: NodeJS.Timeout }>();

  /** Calls `send` with a fresh id; resolves with the answer or `undefined` on timeout. */
  ask(send: (id: number) => void, timeoutMs: number): Promise<unknown> {
    const id = this.#next++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        resolve(undefined);
      }, timeoutMs);
      timer.unref();
      this.#waiting.set(id, { done: resolve, timer });
      send(id);
    });
  }

  answer(id: number, value: unknown): void {
    const waiting = this.#waiting.get(id);
    if (waiting === undefined) return;
    this.#waiting.delete(id);
    clearTimeout(waiting.timer);
    waiting.done(value);
  }
}
