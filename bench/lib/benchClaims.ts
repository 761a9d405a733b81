/** The claims every server of a bench run issues and requires. */
export const BENCH_ISSUER = 'https://portaria.bench';
export const BENCH_AUDIENCE = 'bench-api';
export const BENCH_CLIENT_ID = 'bench';
export const BENCH_SCOPE = 'orders:read';
