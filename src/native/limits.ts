// Bounds on one native call, defined once in native/core/native_limits.h and read from the addon.
import type { NativeLimits } from '../../binding';
import { coreAddon } from './addon';

const addon = coreAddon();

export type { NativeLimits };
export const nativeLimits: NativeLimits = addon.nativeLimits;
