// All wire validators (identity-topology-load.md §2): pure, table-tested, returning WireValidation.
export * from './validate-identity';
export * from './validate-topology';
export * from './validate-load';
export * from './validate-catalog';
export { isUnsupported, type WireErrorKind, type WireValidation, type WireValidationError } from './validation';
