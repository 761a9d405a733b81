/**
 * Step "respond" of the token operation: the token result under one of the contract's
 * two field sets. The reference schema's names are the default (the contract calls it
 * the formal description); `token.responseFields: guide` emits the authentication
 * guide's names for partners coded against the guide. `expira_em` / `expiresAt` is
 * ISO 8601 UTC with milliseconds, which satisfies both descriptions.
 */
import type { ResponseFieldSet } from '../config/types.js';
import type { IssuedToken } from './issueAccessToken.js';

export const TOKEN_TYPE = 'Bearer';
/** A token bound to a DPoP key (RFC 9449 §5.1): the client must send it as `DPoP`. */
export const DPOP_TOKEN_TYPE = 'DPoP';

export type ReferenceTokenResult = {
  token_de_acesso: string;
  expira_em_segundos: number;
  expira_em: string;
  tipo_de_token: string;
  escopo: string;
};

export type GuideTokenResult = {
  accesstoken: string;
  expiresIn: number;
  expiresAt: string;
  tokenType: string;
  scope: string;
};

export function shapeTokenResult(
  fields: ResponseFieldSet,
  issued: IssuedToken,
): ReferenceTokenResult | GuideTokenResult {
  const expiresAt = new Date(issued.expiresAt * 1000).toISOString();
  const tokenType = issued.dpopKey === undefined ? TOKEN_TYPE : DPOP_TOKEN_TYPE;
  if (fields === 'guide') {
    return {
      accesstoken: issued.token,
      expiresIn: issued.lifetimeSeconds,
      expiresAt,
      tokenType,
      scope: issued.scope,
    };
  }
  return {
    token_de_acesso: issued.token,
    expira_em_segundos: issued.lifetimeSeconds,
    expira_em: expiresAt,
    tipo_de_token: tokenType,
    escopo: issued.scope,
  };
}
