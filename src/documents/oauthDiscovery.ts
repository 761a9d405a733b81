/**
 * The discovery documents on the public port (RFC 8414 authorization server metadata,
 * RFC 9728 protected-resource metadata) and the `resource_metadata` parameter of the
 * edge's Bearer challenges (RFC 9728 §5.1). The documents depend on the route table
 * (scopes, resources), so they are rebuilt once per table: a reload is served current,
 * and a request only looks its path up.
 */
import { PortariaError } from '../errors.js';
import type { CompiledRoute, RouteTable } from '../proxy/routeTable.js';
import {
  type AuthorizationServerSettings,
  authorizationServerMetadata,
  authorizationServerMetadataPath,
} from './authorizationServerMetadata.js';
import {
  protectedResourceDocuments,
  protectedResourceMetadataPath,
} from './protectedResourceMetadata.js';
import { StaticDocument } from './staticDocument.js';

/** Clients may keep the documents this long; a route reload shows within it. */
const CACHE_CONTROL = 'public, max-age=300';

export interface OAuthDiscoveryDeps {
  /** The authorization server's settings but those read from the routes. */
  readonly server: Omit<AuthorizationServerSettings, 'scopes' | 'protectedResources'>;
  /** Issuer identifiers whose tokens the edge accepts (RFC 9728 `authorization_servers`). */
  readonly authorizationServers: readonly string[];
  /** The current route table (replaced on reload). */
  readonly routes: () => RouteTable;
}

interface Built {
  readonly table: RouteTable;
  readonly documents: ReadonlyMap<string, StaticDocument>;
}

export class OAuthDiscovery {
  readonly #deps: OAuthDiscoveryDeps;
  readonly #serverPath: string | null;
  /** `scheme://host[:port]` of the published URLs. */
  readonly #origin: string;
  #built: Built | null = null;

  constructor(deps: OAuthDiscoveryDeps) {
    this.#deps = deps;
    this.#serverPath = authorizationServerMetadataPath(deps.server.issuer);
    this.#origin = new URL(deps.server.baseUrl).origin;
  }

  /** The document served at `path`, if any. */
  document(path: string): StaticDocument | undefined {
    if (!path.startsWith('/.well-known/')) return undefined;
    return this.#current().documents.get(path);
  }

  /**
   * `error` with `resource_metadata` added to its Bearer challenge (RFC 9728 §5.1): the
   * document of the route serving the request (`route`, or the one its path matches),
   * else the gateway's. Other errors are returned as they are.
   */
  withResourceMetadata(
    error: PortariaError,
    path: string | undefined,
    route: CompiledRoute | null | undefined,
  ): PortariaError {
    const challenge = error.headers?.['www-authenticate'];
    if (challenge === undefined || !challenge.startsWith(BEARER_CHALLENGE)) return error;
    // The default route's prefix is `/`: the gateway's document.
    const served = route ?? (path === undefined ? null : this.#deps.routes().match(path));
    const prefix = served?.prefix ?? '/';
    const { baseUrl } = this.#deps.server;
    const url = quotable(this.#origin + protectedResourceMetadataPath(baseUrl, prefix));
    return new PortariaError(error.code, error.detail, {
      reason: error.reason,
      headers: { ...error.headers, 'www-authenticate': `${challenge}, resource_metadata="${url}"` },
      cause: error,
    });
  }

  #current(): Built {
    const table = this.#deps.routes();
    if (this.#built?.table === table) return this.#built;
    const documents = new Map<string, StaticDocument>();
    const resources = protectedResourceDocuments(
      this.#deps.server.baseUrl,
      this.#deps.authorizationServers,
      table.routes,
    );
    for (const { path, document } of resources) {
      documents.set(path, StaticDocument.of(document, CACHE_CONTROL));
    }
    if (this.#serverPath !== null) {
      const scopes = [...new Set(table.routes.flatMap((route) => route.scopes))].sort();
      const metadata = authorizationServerMetadata({
        ...this.#deps.server,
        scopes,
        protectedResources: resources.map((r) => r.resource),
      });
      documents.set(this.#serverPath, StaticDocument.of(metadata, CACHE_CONTROL));
    }
    this.#built = { table, documents };
    return this.#built;
  }
}

/** The challenges of the edge (not the admin API's `portaria-admin` realm). */
const BEARER_CHALLENGE = 'Bearer realm="portaria"';

/** A URL safe inside a quoted-string (RFC 9110 §5.6.4): `"` and `\` percent-encoded. */
function quotable(url: string): string {
  return url.replaceAll('"', '%22').replaceAll('\\', '%5C');
}
