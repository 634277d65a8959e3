// Identities of the Relay: pool-identity digests, DC ids, relay identity and layout generations.
export * from './material';
export * from './digests';
export * from './domain';
export * from './dc-id';
export * from './relay';
export * from './generation';
export * from './pool-id';
