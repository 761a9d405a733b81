/**
 * Validates a raw configuration object in one pass and returns it frozen.
 *
 * Every problem is collected and reported together, each with the path of the setting
 * (`routes[2].prefix: …`), so an operator fixes a file in one round. Schema checks come
 * from `schema.ts` (schemaProblems.ts, defaults filled in); the rules a schema cannot say
 * (URLs, canonical prefixes, duplicates, header-name collisions) are one file per section,
 * listed in `ruleProblems`; completeConfig.ts derives what depends on other settings.
 */
import { deepFreeze } from '../lib/deepFreeze.js';
import { authorizerProblems } from './authorizerRules.js';
import { clientCertificateProblems } from './certificateRules.js';
import { type CompleteOptions, completeConfig } from './completeConfig.js';
import { ConfigError } from './configError.js';
import { callerHeaderProblems, identityHeaderProblems } from './headerRules.js';
import { issuerProblems } from './issuerRules.js';
import { type Loose, section, text } from './looseValues.js';
import { oauthProblems } from './oauthRules.js';
import { profileProblems } from './profileRules.js';
import { quotaProblems } from './quotaRules.js';
import { redisProblems, redisTargetOf } from './redisRules.js';
import { routeProblems } from './routeRules.js';
import { schemaProblems } from './schemaProblems.js';
import { portProblems, trustedProxyProblems } from './serverRules.js';
import { defaultIssuerForTls, tlsProblems } from './tlsRules.js';
import { tokenLimitProblems } from './tokenLimitRules.js';
import type { Config } from './types.js';
import { checkUrl } from './urlRules.js';

export { urlPassword } from './redisRules.js';

export type ValidateOptions = CompleteOptions;

export function validateConfig(raw: unknown, options: ValidateOptions): Config {
  const input = structuredClone(raw ?? {});
  defaultIssuerForTls(input);
  // Before the schema's defaults: the profile tells a written value from a default.
  const profile = profileProblems(input as Loose);
  const problems = schemaProblems(input);
  // The rules run on whatever the schema accepted (each reads its settings defensively),
  // so a file with a schema problem and a rule problem shows both in one run.
  problems.push(...ruleProblems(input as Loose), ...profile);
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return deepFreeze(completeConfig(input, options));
}

/**
 * The rules a schema cannot say. Each reads only values of the expected type, so it runs
 * after a schema failure too (a value of the wrong type is the schema's problem, reported
 * there, and skipped here).
 */
function ruleProblems(config: Loose): string[] {
  const problems: string[] = [];
  const issuer = text(config.issuer);
  if (issuer !== null) checkUrl(problems, 'issuer', issuer, ['http:', 'https:']);
  const problemTypeBase = text(config.problemTypeBase);
  if (problemTypeBase !== null) checkUrl(problems, 'problemTypeBase', problemTypeBase, null);
  const redisTarget = redisTargetOf(config);
  problems.push(
    ...routeProblems(config),
    ...identityHeaderProblems(config),
    ...issuerProblems(config),
    ...redisProblems(config, redisTarget),
    ...oauthProblems(section(config.oauth), redisTarget, section(config.clientCertificate).source),
    ...tokenLimitProblems(config),
    ...quotaProblems(config),
    ...trustedProxyProblems(config),
    ...callerHeaderProblems(config),
    ...portProblems(config),
    ...tlsProblems(config),
    ...clientCertificateProblems(config),
    ...authorizerProblems(config),
  );
  return problems;
}
