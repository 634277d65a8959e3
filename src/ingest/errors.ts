/** A message from an engine that does not follow the KV-event wire format (counted as malformed). */
export class DecodeError extends Error {
  override readonly name = 'DecodeError';
}
