/**
 * The public listener's TLS: the options it is created with, and its secure context
 * swapped on reload (`tls.Server#setSecureContext`): handshakes from then on use the new
 * files, connections already open keep the session they have.
 *
 *   client certificates  asked for with `request` and `require` (the CA names sent are
 *                        `clientCertificate.caFiles`'), never refused at the handshake
 *                        (`rejectUnauthorized: false`): the request gets an HTTP answer
 *                        with the reason (`tls/peerCertificate.ts`, the opening step)
 *   renegotiation        refused by OpenSSL (SSL_OP_NO_RENEGOTIATION: the connection
 *                        fails); TLS 1.3 has none
 *   resumption           session tickets, with keys from `ticketKeys.ts`; Node's
 *                        default lifetime (300 s)
 *   handshake time       bounded by the caller (`server.headersTimeoutMs`), not Node's 120 s
 *
 * node:cluster shares a TLS server's ticket keys between the workers of a group through
 * the server's `_getServerData` / `_setServerData` (the first worker's keys go to the
 * others when they listen): here they carry the base the keys are derived from.
 */
import { constants } from 'node:crypto';
import type { TlsOptions, Server as TlsServer } from 'node:tls';
import { newTicketBase, ticketKeysFor } from './ticketKeys.js';
import { contextFiles, type TlsMaterial, type TlsSettings } from './tlsMaterial.js';
import { policyOptions } from './tlsPolicy.js';

/** What node:cluster exchanges for a TLS server (internal to Node; see the header). */
interface ClusterServerData {
  ticketKeys: string;
}

type SharedServer = TlsServer & {
  _getServerData?: () => ClusterServerData;
  _setServerData?: (data: ClusterServerData | null | undefined) => void;
};

export class ServerTls {
  readonly #settings: TlsSettings;
  #material: TlsMaterial;
  #base: Buffer = newTicketBase();
  #server: SharedServer | null = null;

  constructor(settings: TlsSettings, material: TlsMaterial) {
    this.#settings = settings;
    this.#material = material;
  }

  /** `https.createServer`'s TLS options. */
  serverOptions(handshakeTimeoutMs: number): TlsOptions {
    const mode = this.#settings.tls.clientCertificates;
    return {
      ...this.#contextOptions(this.#material),
      requestCert: mode !== 'off',
      rejectUnauthorized: false,
      handshakeTimeout: handshakeTimeoutMs,
    };
  }

  /** Takes charge of `server`'s context (reloads) and of its ticket keys in a group. */
  attach(server: TlsServer): void {
    const shared = server as SharedServer;
    this.#server = shared;
    shared._getServerData = () => ({ ticketKeys: this.#base.toString('hex') });
    shared._setServerData = (data) => {
      if (typeof data?.ticketKeys !== 'string') return;
      const base = Buffer.from(data.ticketKeys, 'hex');
      if (base.length !== this.#base.length) return;
      this.#base = base;
      shared.setTicketKeys(ticketKeysFor(base, this.#material.trustDigest));
    };
  }

  /** New handshakes use `material`; open connections are left as they are. */
  apply(material: TlsMaterial): void {
    this.#server?.setSecureContext(this.#contextOptions(material));
    this.#material = material;
  }

  /** The running server certificate's validity. */
  get material(): TlsMaterial {
    return this.#material;
  }

  #contextOptions(material: TlsMaterial): TlsOptions {
    return {
      ...contextFiles(material),
      ...policyOptions(this.#settings.tls),
      secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
      ticketKeys: ticketKeysFor(this.#base, material.trustDigest),
    };
  }
}
