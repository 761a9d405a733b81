/**
 * The discovery documents on the public port (RFC 8414 authorization server metadata,
 * RFC 9728 protected-resource metadata) and the URL the edge's Bearer challenges name in
 * `resource_metadata` (RFC 9728 §5.1). The documents depend on the route table
 * (scopes, resources), so they are rebuilt once per table: a reload is served current,
 * and a request only looks its path up.
 */
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
   * The RFC 9728 document URL a Bearer challenge names (`resource_metadata`, §5.1): the
   * document of the route serving the request (`route`, or the one its path matches),
   * else the gateway's.
   */
  resourceMetadataUrl(path: string | undefined, route: CompiledRoute | null): string {
    // The default route's prefix is `/`: the gateway's document.
    const served = route ?? (path === undefined ? null : this.#deps.routes().match(path));
    const prefix = served?.prefix ?? '/';
    return this.#origin + protectedResourceMetadataPath(this.#deps.server.baseUrl, prefix);
  }

  #current(): Built {
    const table = this.#deps.routes();
    if (this.#built?.table === table) return this.#built;
    const documents = new Map<string, StaticDocument>();
    const resources = protectedResourceDocuments(
      this.#deps.server.baseUrl,
      this.#deps.authorizationServers,
      table.routes,
      this.#deps.server.dpopAlgorithms ?? [],
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
