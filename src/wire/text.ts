// Text rules shared by the validators. They follow Rust semantics exactly, because the reference
// validates with `str::trim` and `char::is_control`, which differ from JavaScript's String#trim.
import { SUBSCRIBER_ID_MAX_BYTES } from './constants';
import { fail } from './validation';

// Unicode White_Space (Rust char::is_whitespace). Unlike JS trim: includes U+0085, excludes U+FEFF.
const WS = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const SURROUNDING_WHITESPACE = new RegExp(`^[${WS}]|[${WS}]$`);

// Unicode general category Cc (Rust char::is_control).
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** True when `value` is non-empty and has no leading/trailing Unicode whitespace. */
export function isValidText(value: string): boolean {
  return value.length > 0 && !SURROUNDING_WHITESPACE.test(value);
}

/** validate_text: empty or surrounding whitespace → InvalidText(field). */
export function checkText(field: string, value: string): void {
  if (typeof value !== 'string' || !isValidText(value)) {
    fail('InvalidText', `${field} must not be empty or contain surrounding whitespace`, { field });
  }
}

export function hasControlCharacter(value: string): boolean {
  return CONTROL.test(value);
}

/** wire-contract.md §5.1 step 2, in order; no trimming or truncation. */
export function checkSubscriberId(value: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    fail('InvalidSubscriberId', 'subscriber_id must not be empty', { field: 'subscriber_id' });
  }
  if (Buffer.byteLength(value, 'utf8') > SUBSCRIBER_ID_MAX_BYTES) {
    fail('InvalidSubscriberId', `subscriber_id exceeds ${SUBSCRIBER_ID_MAX_BYTES} bytes`, { field: 'subscriber_id' });
  }
  if (hasControlCharacter(value)) {
    fail('InvalidSubscriberId', 'subscriber_id must not contain control characters', { field: 'subscriber_id' });
  }
}
