/**
 * A worker's end of the IPC channel: questions to the primary (with their answers),
 * one-way messages, and the primary's messages dispatched by kind. A send on a closed
 * channel (the primary is gone: node:cluster then ends this worker) is dropped.
 */
import { isPortariaMessage, type PrimaryMessage, type WorkerMessage } from './messages.js';
import { PendingAnswers } from './pendingAnswers.js';

type Handler = (message: PrimaryMessage) => void;

export class WorkerChannel {
  readonly #pending = new PendingAnswers();
  readonly #handlers = new Map<string, Handler>();

  constructor() {
    process.on('message', (message: unknown) => {
      if (!isPortariaMessage<PrimaryMessage>(message)) return;
      if (message.portaria === 'answer') this.#pending.answer(message.id, message.value);
      else this.#handlers.get(message.portaria)?.(message);
    });
  }

  /** Handles the primary's messages of one kind (one handler per kind). */
  on<K extends PrimaryMessage['portaria']>(
    kind: K,
    handler: (message: Extract<PrimaryMessage, { portaria: K }>) => void,
  ): void {
    this.#handlers.set(kind, handler as Handler);
  }

  /** Sends a question and resolves with its answer, or `undefined` after `timeoutMs`. */
  ask(message: (id: number) => WorkerMessage, timeoutMs: number): Promise<unknown> {
    return this.#pending.ask((id) => this.send(message(id)), timeoutMs);
  }

  /** Sends `message`; `written` runs once it is handed to the channel (or dropped). */
  send(message: WorkerMessage, written?: () => void): void {
    if (process.send === undefined || !process.connected) {
      written?.();
      return;
    }
    try {
      process.send(message, undefined, {}, () => written?.());
    } catch {
      written?.();
    }
  }

  /** Answers a question of the primary. */
  answer(id: number, value: unknown): void {
    this.send({ portaria: 'answer', id, value });
  }
}
