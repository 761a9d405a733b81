/** The entries a proxy asks for a decision through (`authorizer/`; docs/authorizer.md). */
export type DecisionEntry = 'nginx' | 'traefik' | 'envoy' | 'envoy-grpc';
