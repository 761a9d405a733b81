/** What every server and load of a bench run shares: the claims, the bench client, the token operation. */
export const BENCH_ISSUER = 'https://portaria.bench';
export const BENCH_AUDIENCE = 'bench-api';
export const BENCH_CLIENT_ID = 'bench';
export const BENCH_SCOPE = 'orders:read';
/** The bench client's secret (a generated-style secret, sha256-hashed in the clients file). */
export const BENCH_CLIENT_SECRET = 'bench-secret-0123456789abcdefghijklmnopqrst';
/** The contract's token operation. */
export const TOKEN_PATH = '/v1/authentication/accesstoken';

/** Token limits all on, each far above what one load generator reaches, so none refuses. */
export const LIMITS_ON_NOT_REFUSING = {
  tokenLimits: {
    store: 'local',
    perAddress: { enabled: true, ratePerSecond: 100_000, burst: 1_000_000 },
    perClient: { enabled: true, ratePerSecond: 100_000, burst: 1_000_000 },
    failedSecretBackoff: { enabled: true },
  },
};
