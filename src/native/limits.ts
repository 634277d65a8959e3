// Bounds on one native call, defined once in native/native_limits.h and read from the addon.
import type { NativeLimits } from '../../binding';
import { addon } from './addon';

export type { NativeLimits };
export const nativeLimits: NativeLimits = addon.nativeLimits;
