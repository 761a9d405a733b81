/**
 * Settings an older version took and this one refuses, with what to write instead: the
 * configuration check names the replacement rather than calling the key unknown, and
 * the chart refuses them with the same words (`helm/portaria/templates/_helpers.tpl`).
 */
export interface RemovedSetting {
  readonly path: readonly string[];
  readonly instead: string;
}

export const REMOVED_SETTINGS: readonly RemovedSetting[] = [
  {
    path: ['server', 'trustForwardedHeaders'],
    instead:
      'replaced by server.trustedProxies, the addresses or CIDRs of the proxies in front of the gateway (e.g. [10.0.0.0/8]); remove trustForwardedHeaders (false is trustedProxies: [])',
  },
];
